//! Talos' bootstrap manifests in the real API server: each object of the
//! serving control plane's rendered manifests (`talos::manifests`) created
//! where absent, as Talos' manifest apply controller does, with the
//! resource paths found through the API server's discovery. An object of
//! a kind not served yet (a custom resource whose definition comes in the
//! same batch), or one the server refuses, is tried again at the next
//! pass; the caller says why.

use std::collections::BTreeMap;

use serde_json::Value;

use super::client::{Client, ClientError};

/// Where objects of a kind are: `/api/v1` or `/apis/<group>/<version>`,
/// the resource's plural, and whether it is namespaced.
#[derive(Debug, Clone)]
struct Resource {
    base: String,
    plural: String,
    namespaced: bool,
}

/// Kinds by `apiVersion` and `kind`, from the server's discovery.
#[derive(Default)]
pub struct Discovery(BTreeMap<(String, String), Resource>);

impl Discovery {
    async fn load(client: &Client) -> Result<Self, ClientError> {
        let mut kinds = BTreeMap::new();
        let mut bases = vec![("v1".to_string(), "/api/v1".to_string())];
        let groups = client.get("/apis").await?;
        for group in groups.body["groups"].as_array().into_iter().flatten() {
            for version in group["versions"].as_array().into_iter().flatten() {
                if let Some(gv) = version["groupVersion"].as_str() {
                    bases.push((gv.to_string(), format!("/apis/{gv}")));
                }
            }
        }
        for (group_version, base) in bases {
            let list = client.get(&base).await?;
            for resource in list.body["resources"].as_array().into_iter().flatten() {
                let (Some(plural), Some(kind)) =
                    (resource["name"].as_str(), resource["kind"].as_str())
                else {
                    continue;
                };
                if plural.contains('/') {
                    continue; // a subresource
                }
                kinds.insert(
                    (group_version.clone(), kind.to_string()),
                    Resource {
                        base: base.clone(),
                        plural: plural.to_string(),
                        namespaced: resource["namespaced"].as_bool().unwrap_or(false),
                    },
                );
            }
        }
        Ok(Self(kinds))
    }

    fn collection(&self, object: &Value) -> Option<String> {
        let key = (
            object["apiVersion"].as_str()?.to_string(),
            object["kind"].as_str()?.to_string(),
        );
        let resource = self.0.get(&key)?;
        Some(if resource.namespaced {
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default");
            format!(
                "{}/namespaces/{namespace}/{}",
                resource.base, resource.plural
            )
        } else {
            format!("{}/{}", resource.base, resource.plural)
        })
    }
}

/// Creates the objects that are absent; says why of each that is not
/// there yet (none: every object exists, created now or before).
pub async fn create_missing(
    client: &Client,
    objects: &[(String, Value)],
) -> Result<Vec<String>, ClientError> {
    let mut discovery = Discovery::load(client).await?;
    let mut reloaded = false;
    let mut problems = Vec::new();
    for (manifest, object) in objects {
        let mut collection = discovery.collection(object);
        if collection.is_none() && !reloaded {
            // Its definition may have been created by an earlier object.
            discovery = Discovery::load(client).await?;
            reloaded = true;
            collection = discovery.collection(object);
        }
        let Some(collection) = collection else {
            problems.push(format!(
                "{manifest}: {} {} is not served (yet)",
                object["apiVersion"].as_str().unwrap_or("?"),
                object["kind"].as_str().unwrap_or("?")
            ));
            continue;
        };
        // Looked up first, as Talos does: creating a Service whose fixed
        // cluster IP it already holds answers 422, not 409.
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if client.get(&format!("{collection}/{name}")).await?.ok() {
            continue;
        }
        let answer = client.post(&collection, object).await?;
        if !answer.ok() && answer.status != 409 {
            problems.push(format!(
                "{manifest}: the API server refused {} {}: {}",
                object["kind"].as_str().unwrap_or("?"),
                object["metadata"]["name"].as_str().unwrap_or("?"),
                answer.why()
            ));
        }
    }
    Ok(problems)
}
