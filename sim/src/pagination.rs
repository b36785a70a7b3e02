//! `?page=&per_page=` paging with `meta.pagination`, and `?sort=field[:asc|:desc]`.

use std::cmp::Ordering;

use serde::Serialize;

use crate::errors::ApiError;

pub const DEFAULT_PER_PAGE: u64 = 25;
pub const MAX_PER_PAGE: u64 = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub page: u64,
    pub per_page: u64,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self {
            page: 1,
            per_page: DEFAULT_PER_PAGE,
        }
    }
}

impl PageRequest {
    /// Larger pages than the API allows are cut to its maximum, as Hetzner does.
    pub fn parse(page: Option<&str>, per_page: Option<&str>) -> Result<Self, ApiError> {
        fn positive(name: &str, text: &str) -> Result<u64, ApiError> {
            match text.trim().parse::<u64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(ApiError::field(name, "must be a positive integer")),
            }
        }
        let page = page.map(|p| positive("page", p)).transpose()?.unwrap_or(1);
        let per_page = per_page
            .map(|p| positive("per_page", p))
            .transpose()?
            .unwrap_or(DEFAULT_PER_PAGE)
            .min(MAX_PER_PAGE);
        Ok(Self { page, per_page })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pagination {
    pub page: u64,
    pub per_page: u64,
    pub previous_page: Option<u64>,
    pub next_page: Option<u64>,
    pub last_page: u64,
    pub total_entries: u64,
}

/// The requested page of `items` and its `meta.pagination`.
pub fn paginate<T>(items: Vec<T>, request: PageRequest) -> (Vec<T>, Pagination) {
    let total = items.len() as u64;
    let last_page = total.div_ceil(request.per_page).max(1);
    let skip = (request.page - 1).saturating_mul(request.per_page);
    let page: Vec<T> = items
        .into_iter()
        .skip(usize::try_from(skip).unwrap_or(usize::MAX))
        .take(request.per_page as usize)
        .collect();
    let meta = Pagination {
        page: request.page,
        per_page: request.per_page,
        previous_page: (request.page > 1).then(|| request.page - 1),
        next_page: (request.page < last_page).then(|| request.page + 1),
        last_page,
        total_entries: total,
    };
    (page, meta)
}

/// A value to sort by; missing values sort first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SortKey {
    Missing,
    Int(i64),
    Text(String),
}

pub trait Sortable {
    fn id(&self) -> i64;
    /// The value of `field`, one of the names the endpoint allows.
    fn sort_key(&self, field: &str) -> SortKey;
}

impl<T: Sortable> Sortable for &T {
    fn id(&self) -> i64 {
        (*self).id()
    }

    fn sort_key(&self, field: &str) -> SortKey {
        (*self).sort_key(field)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SortOrder(Vec<(String, bool)>);

impl SortOrder {
    /// Parses every `sort` parameter; `allowed` lists the fields of the endpoint.
    pub fn parse(values: &[&str], allowed: &[&str]) -> Result<Self, ApiError> {
        let mut order = Vec::new();
        for value in values.iter().flat_map(|v| v.split(',')) {
            let (field, descending) = match value.rsplit_once(':') {
                Some((field, "asc")) => (field, false),
                Some((field, "desc")) => (field, true),
                Some(_) => return Err(ApiError::field("sort", format!("invalid sort '{value}'"))),
                None => (value, false),
            };
            if !allowed.contains(&field) {
                return Err(ApiError::field(
                    "sort",
                    format!(
                        "cannot sort by '{field}', use one of {}",
                        allowed.join(", ")
                    ),
                ));
            }
            order.push((field.to_string(), descending));
        }
        Ok(Self(order))
    }

    /// Sorts by the requested keys, then by id.
    pub fn sort<T: Sortable>(&self, items: &mut [T]) {
        items.sort_by(|a, b| {
            for (field, descending) in &self.0 {
                let ordering = a.sort_key(field).cmp(&b.sort_key(field));
                let ordering = if *descending {
                    ordering.reverse()
                } else {
                    ordering
                };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
            a.id().cmp(&b.id())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_through_entries() {
        let items: Vec<u32> = (1..=7).collect();
        let request = PageRequest::parse(Some("2"), Some("3")).unwrap();
        let (page, meta) = paginate(items.clone(), request);
        assert_eq!(page, vec![4, 5, 6]);
        assert_eq!(
            meta,
            Pagination {
                page: 2,
                per_page: 3,
                previous_page: Some(1),
                next_page: Some(3),
                last_page: 3,
                total_entries: 7,
            }
        );
        let (page, meta) = paginate(
            items.clone(),
            PageRequest::parse(Some("3"), Some("3")).unwrap(),
        );
        assert_eq!(page, vec![7]);
        assert_eq!(meta.next_page, None);
        let (page, meta) = paginate(items, PageRequest::parse(Some("9"), Some("3")).unwrap());
        assert!(page.is_empty());
        assert_eq!(meta.previous_page, Some(8));
        assert_eq!(meta.next_page, None);
    }

    #[test]
    fn empty_list_has_one_page() {
        let (page, meta) = paginate(Vec::<u8>::new(), PageRequest::default());
        assert!(page.is_empty());
        assert_eq!(meta.last_page, 1);
        assert_eq!(meta.total_entries, 0);
        assert_eq!(meta.per_page, 25);
        assert_eq!((meta.previous_page, meta.next_page), (None, None));
    }

    #[test]
    fn per_page_is_capped_and_validated() {
        assert_eq!(PageRequest::parse(None, Some("500")).unwrap().per_page, 50);
        for bad in ["0", "-1", "x", ""] {
            let err = PageRequest::parse(Some(bad), None).unwrap_err();
            assert_eq!(err.code(), "invalid_input", "{bad}");
        }
    }

    struct Item(i64, &'static str);
    impl Sortable for Item {
        fn id(&self) -> i64 {
            self.0
        }
        fn sort_key(&self, field: &str) -> SortKey {
            match field {
                "id" => SortKey::Int(self.0),
                _ => SortKey::Text(self.1.to_string()),
            }
        }
    }

    #[test]
    fn sorts_by_fields_and_direction() {
        let mut items = vec![Item(1, "b"), Item(2, "a"), Item(3, "b")];
        SortOrder::parse(&["name:desc"], &["id", "name"])
            .unwrap()
            .sort(&mut items);
        assert_eq!(items.iter().map(|i| i.0).collect::<Vec<_>>(), vec![1, 3, 2]);
        SortOrder::parse(&["name", "id:desc"], &["id", "name"])
            .unwrap()
            .sort(&mut items);
        assert_eq!(items.iter().map(|i| i.0).collect::<Vec<_>>(), vec![2, 3, 1]);
        assert!(SortOrder::parse(&["created"], &["id", "name"]).is_err());
        assert!(SortOrder::parse(&["id:up"], &["id"]).is_err());
    }
}
