//! What the Kubernetes components of a node are started with that the
//! rest of the emulation does not read (the real control plane does,
//! `talos::kube_control_plane`): the service-account key, the etcd
//! encryption configuration and the components' `extraArgs`, each from its
//! Talos v1.14 document when there is one, else from the v1alpha1 field it
//! replaced. Read once, as the config is parsed.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::talos::pki;
use crate::talos::secret::Secret;

/// The settings of one config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The service-account signing key, PEM.
    pub service_account_key: Option<Secret>,
    /// kube-apiserver's `EncryptionConfiguration`, as JSON.
    pub encryption: Option<Secret>,
    pub api_server_args: BTreeMap<String, String>,
    pub controller_manager_args: BTreeMap<String, String>,
    pub kubelet_args: BTreeMap<String, String>,
}

impl Settings {
    /// Whether the kubelet leaves node initialisation to a cloud controller
    /// manager (and registers with the `uninitialized` taint).
    pub fn external_cloud_provider(&self) -> bool {
        self.kubelet_args.get("cloud-provider").map(String::as_str) == Some("external")
    }
}

/// Reads `text`, a machine config (several YAML documents).
pub fn read(text: &str) -> Settings {
    let mut settings = Settings::default();
    let mut providers: Option<Value> = None;
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let Ok(doc) = Value::deserialize(document) else {
            continue;
        };
        match doc["kind"].as_str() {
            None if doc["version"] == "v1alpha1" => {
                let cluster = &doc["cluster"];
                if let Some(key) = cluster["serviceAccount"]["key"].as_str() {
                    settings.service_account_key =
                        pki::decode_config_pem(key).ok().map(Secret::new);
                }
                providers = providers.or_else(|| legacy_encryption(cluster));
                merge(
                    &mut settings.api_server_args,
                    &cluster["apiServer"]["extraArgs"],
                );
                merge(
                    &mut settings.controller_manager_args,
                    &cluster["controllerManager"]["extraArgs"],
                );
                merge(
                    &mut settings.kubelet_args,
                    &doc["machine"]["kubelet"]["extraArgs"],
                );
            }
            Some("KubeServiceAccountConfig") => {
                if let Some(key) = doc["issuer"]["privateKey"].as_str() {
                    settings.service_account_key = Some(Secret::new(key.to_string()));
                }
            }
            Some("KubeEtcdEncryptionConfig") => {
                providers = Some(doc["config"]["resources"].clone());
            }
            Some("KubeAPIServerConfig") => merge(&mut settings.api_server_args, &doc["extraArgs"]),
            Some("KubeControllerManagerConfig") => {
                merge(&mut settings.controller_manager_args, &doc["extraArgs"]);
            }
            Some("KubeletConfig") => merge(&mut settings.kubelet_args, &doc["extraArgs"]),
            _ => {}
        }
    }
    settings.encryption = providers.map(|resources| {
        Secret::new(
            json!({
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "EncryptionConfiguration",
                "resources": with_identity(resources),
            })
            .to_string(),
        )
    });
    settings
}

/// The resources Talos encrypts with `secretboxEncryptionSecret` (key
/// `key2`) and `aescbcEncryptionSecret` (key `key1`), in that order.
fn legacy_encryption(cluster: &Value) -> Option<Value> {
    let mut providers = Vec::new();
    if let Some(secret) = cluster["secretboxEncryptionSecret"].as_str() {
        providers.push(json!({"secretbox": {"keys": [{"name": "key2", "secret": secret}]}}));
    }
    if let Some(secret) = cluster["aescbcEncryptionSecret"].as_str() {
        providers.push(json!({"aescbc": {"keys": [{"name": "key1", "secret": secret}]}}));
    }
    (!providers.is_empty()).then(|| json!([{"resources": ["secrets"], "providers": providers}]))
}

/// Each resource's providers end with `identity`, as Talos writes them, so
/// that data stored before encryption was on still reads.
fn with_identity(mut resources: Value) -> Value {
    for resource in resources.as_array_mut().into_iter().flatten() {
        if let Some(providers) = resource["providers"].as_array_mut()
            && !providers.iter().any(|p| p.get("identity").is_some())
        {
            providers.push(json!({"identity": {}}));
        }
    }
    resources
}

/// Adds `extraArgs` (a value or a list of values per flag; a list is
/// passed comma-separated) to `args`, later ones winning.
fn merge(args: &mut BTreeMap<String, String>, extra: &Value) {
    for (flag, value) in extra.as_object().into_iter().flatten() {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        };
        args.insert(flag.clone(), text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_fields_and_v1_14_documents_read_alike() {
        use base64::Engine;
        let key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
        let legacy = format!(
            "version: v1alpha1\nmachine:\n  kubelet:\n    extraArgs:\n      cloud-provider: external\n\
             cluster:\n  serviceAccount:\n    key: {}\n  secretboxEncryptionSecret: c2VjcmV0\n\
             \x20 controllerManager:\n    extraArgs:\n      node-cidr-mask-size-ipv4: \"24\"\n",
            base64::engine::general_purpose::STANDARD.encode(key)
        );
        let settings = read(&legacy);
        assert!(settings.external_cloud_provider());
        assert!(
            settings
                .service_account_key
                .as_ref()
                .unwrap()
                .expose()
                .starts_with("-----BEGIN EC PRIVATE KEY-----")
        );
        assert_eq!(
            settings.controller_manager_args["node-cidr-mask-size-ipv4"],
            "24"
        );
        let encryption: Value =
            serde_json::from_str(settings.encryption.as_ref().unwrap().expose()).unwrap();
        assert_eq!(
            encryption["resources"][0]["providers"],
            json!([{"secretbox": {"keys": [{"name": "key2", "secret": "c2VjcmV0"}]}}, {"identity": {}}])
        );

        let v1_14 = "version: v1alpha1\ncluster: {}\n---\napiVersion: v1alpha1\nkind: KubeletConfig\n\
                     extraArgs:\n  cloud-provider: [external]\n---\napiVersion: v1alpha1\nkind: KubeServiceAccountConfig\n\
                     issuer:\n  privateKey: \"-----BEGIN EC PRIVATE KEY-----\\n\"\n---\napiVersion: v1alpha1\n\
                     kind: KubeEtcdEncryptionConfig\nconfig:\n  resources:\n    - resources: [secrets]\n      \
                     providers:\n        - aescbc:\n            keys: [{name: key1, secret: c2VjcmV0}]\n";
        let settings = read(v1_14);
        assert!(settings.external_cloud_provider());
        assert!(settings.service_account_key.is_some());
        let encryption: Value =
            serde_json::from_str(settings.encryption.as_ref().unwrap().expose()).unwrap();
        assert_eq!(
            encryption["resources"][0]["providers"][1],
            json!({"identity": {}})
        );
    }
}
