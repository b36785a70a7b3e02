//! How many nodes may be out of service at once while a group changes
//! (Talos upgrades, config re-applies that may reboot, resizes): a pool's
//! `update_strategy.max_unavailable`, a count or a percentage of its nodes
//! (rounded down, at least 1); control planes always one at a time.
//!
//! How a group runs its changes within it, and the cluster-wide limit
//! across pools, is `rolling`.

/// `max_unavailable` as written: a count, or a percentage of the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Count(u32),
    Percent(u32),
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("{0:?} is not a count (e.g. 2) or a percentage (e.g. \"20%\")")]
    NotANumber(String),
    #[error("{0:?}: at least one node must be allowed to go down (use 1 or more)")]
    Zero(String),
    #[error("{0:?}: a percentage is 1% to 100%")]
    OverHundred(String),
}

impl Budget {
    /// One node at a time: control planes, and pools by default.
    pub const ONE: Self = Self::Count(1);

    pub fn parse(text: &str) -> Result<Self, BudgetError> {
        let trimmed = text.trim();
        let (number, percent) = match trimmed.strip_suffix('%') {
            Some(number) => (number.trim(), true),
            None => (trimmed, false),
        };
        let value: u32 = number
            .parse()
            .map_err(|_| BudgetError::NotANumber(text.to_string()))?;
        match (value, percent) {
            (0, _) => Err(BudgetError::Zero(text.to_string())),
            (101.., true) => Err(BudgetError::OverHundred(text.to_string())),
            (value, true) => Ok(Self::Percent(value)),
            (value, false) => Ok(Self::Count(value)),
        }
    }

    /// How many of `nodes` may be out at once: rounded down, at least 1.
    pub fn nodes(self, nodes: usize) -> usize {
        let allowed = match self {
            Self::Count(count) => count as usize,
            Self::Percent(percent) => nodes * percent as usize / 100,
        };
        allowed.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_percentages_round_down_to_at_least_one() {
        assert_eq!(Budget::parse("2"), Ok(Budget::Count(2)));
        assert_eq!(Budget::parse("20%"), Ok(Budget::Percent(20)));
        assert_eq!(Budget::Count(2).nodes(5), 2);
        assert_eq!(Budget::Percent(20).nodes(30), 6);
        assert_eq!(Budget::Percent(20).nodes(9), 1);
        assert_eq!(Budget::Percent(20).nodes(4), 1);
        assert_eq!(Budget::Percent(100).nodes(7), 7);
    }

    #[test]
    fn refuses_zero_too_much_and_words() {
        assert_eq!(Budget::parse("0"), Err(BudgetError::Zero("0".into())));
        assert_eq!(Budget::parse("0%"), Err(BudgetError::Zero("0%".into())));
        assert_eq!(
            Budget::parse("150%"),
            Err(BudgetError::OverHundred("150%".into()))
        );
        assert_eq!(
            Budget::parse("abc"),
            Err(BudgetError::NotANumber("abc".into()))
        );
        assert!(Budget::parse("-1").is_err());
    }
}
