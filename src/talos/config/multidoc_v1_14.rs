//! Talos v1.14's multi-document configuration, above all of Kubernetes
//! (one home for the move and its rule):
//!
//! - [`split`] moves hct's settings out of the v1alpha1 fields that v1.14
//!   deprecates into the documents that replace them, in the shapes Talos'
//!   own v1.14 generator writes: identity and discovery, host DNS,
//!   KubePrism, the install (`UnattendedInstallConfig`, the disk as a CEL
//!   selector), the cluster's name and endpoint, the node's IPs, labels and
//!   taints, the kubelet, the pod and service ranges with the per-node mask,
//!   the CAs and the service-account key (PEM text, where v1alpha1 held
//!   base64), etcd encryption, and the control-plane components. What stays
//!   in v1alpha1: the machine's token, OS CA, SANs and features, the
//!   bootstrap token and etcd.
//! - [`REPLACED`]: which deprecated fields each document replaces. Talos
//!   v1.14 refuses a config that sets both; [`conflict`] finds the first
//!   such pair, so a user patch written in the old form is refused at plan
//!   time with the fix. Inline and external manifests are the exception:
//!   Talos takes the documents' and `cluster.inlineManifests` together.
//!
//! The etcd encryption key keeps the name the v1alpha1 path gave it
//! (`key2` for secretbox, `key1` for AES-CBC), so the API server still
//! decrypts the Secrets it wrote before the move.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::documents::{of_kind, v1alpha1};
use super::input::Role;

/// The label and taint Talos gives a control plane; from v1.14 they are
/// written in `KubeNodeConfig` instead of added behind the config's back.
const CONTROL_PLANE_ROLE: &str = "node-role.kubernetes.io/control-plane";
/// The discovery service Talos defaults to.
const DISCOVERY_ENDPOINT: &str = "https://discovery.talos.dev/";

/// A v1.14 document, as Talos writes them.
fn document(kind: &str, body: Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("v1alpha1"));
    out.insert("kind".into(), json!(kind));
    if let Value::Object(fields) = body {
        out.extend(fields);
    }
    Value::Object(out)
}

/// Removes `key` from the object at `path` of `value` (nothing when absent).
fn take(value: &mut Value, path: &[&str], key: &str) -> Option<Value> {
    let at = path
        .iter()
        .try_fold(&mut *value, |at, step| at.get_mut(*step))?;
    let taken = at.as_object_mut()?.remove(key);
    // Leave no empty section behind: Talos reads its presence as "set".
    let emptied = at.as_object().is_some_and(Map::is_empty);
    if let (true, Some((last, parent))) = (emptied, path.split_last()) {
        take(value, parent, last);
    }
    taken
}

/// v1alpha1 keeps certificates and keys as base64 of their PEM text; the
/// new documents take the PEM text.
fn pem(value: Option<&Value>) -> Option<String> {
    let text = value?.as_str().filter(|t| !t.is_empty())?;
    let bytes = STANDARD.decode(text).ok()?;
    String::from_utf8(bytes).ok()
}

/// Moves what v1.14 deprecates out of `main` (hct's v1alpha1 document) and
/// returns the documents that now hold it, in the order Talos' generator
/// writes them.
///
/// `pod_mask` is the plan's per-node pod CIDR mask: every node's
/// `KubeNetworkConfig` names it (Talos checks the pod subnet against it on
/// workers too, where v1alpha1 had it only in the controller manager's
/// arguments).
pub(crate) fn split(main: &mut Value, role: Role, pod_mask: u8) -> Vec<Value> {
    let mut out = discovery(main);
    out.extend(host_dns(main));
    out.extend(install(main));
    out.extend(kubernetes(main, role, pod_mask));
    out
}

/// `UnattendedInstallConfig`: the installer image, and the disk as the CEL
/// selector Talos' generator writes for an install disk.
fn install(main: &mut Value) -> Option<Value> {
    let install = take(main, &["machine"], "install")?;
    let disk = install["disk"].as_str().unwrap_or_default();
    Some(document(
        "UnattendedInstallConfig",
        json!({
            "installer": {"image": install["image"]},
            "provisioning": {
                "diskSelector": {"match": format!("disk.dev_path == {disk:?}")},
                "wipe": install.get("wipe").cloned().unwrap_or(json!(false)),
            },
        }),
    ))
}

fn discovery(main: &mut Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(discovery) = take(main, &["cluster"], "discovery") {
        let enabled = discovery["enabled"].as_bool().unwrap_or(false);
        let service = &discovery["registries"]["service"];
        if enabled && !service["disabled"].as_bool().unwrap_or(false) {
            let endpoint = service["endpoint"].as_str().unwrap_or(DISCOVERY_ENDPOINT);
            out.push(document(
                "DiscoveryServiceConfig",
                json!({"name": "default", "endpoint": endpoint}),
            ));
        }
    }
    let id = take(main, &["cluster"], "id");
    let secret = take(main, &["cluster"], "secret");
    if let (Some(id), Some(secret)) = (id, secret) {
        out.push(document(
            "DiscoveryIdentityConfig",
            json!({"clusterID": id, "clusterSecret": secret}),
        ));
    }
    out
}

fn host_dns(main: &mut Value) -> Option<Value> {
    let host_dns = take(main, &["machine", "features"], "hostDNS")?;
    Some(document("ResolverConfig", json!({"hostDNS": host_dns})))
}

fn kubernetes(main: &mut Value, role: Role, pod_mask: u8) -> Vec<Value> {
    let mut out = Vec::new();
    let name = take(main, &["cluster"], "clusterName");
    let endpoint = take(main, &["cluster", "controlPlane"], "endpoint");
    if let (Some(name), Some(endpoint)) = (name, endpoint.clone()) {
        out.push(document(
            "KubeClusterConfig",
            json!({"clusterName": name, "endpoint": endpoint}),
        ));
    }
    out.push(node(main, role));
    out.extend(kubelet(main));
    // The controller manager takes the mask from KubeNetworkConfig.
    take(
        main,
        &["cluster", "controllerManager", "extraArgs"],
        "node-cidr-mask-size-ipv4",
    );
    if let Some(mut network) = take(main, &["cluster"], "network") {
        if let Some(fields) = network.as_object_mut() {
            // CNI `none`: from v1.14 only a KubeFlannelCNIConfig document
            // deploys Flannel.
            fields.remove("cni");
            fields.insert("nodeCIDRMaskSizeIPv4".into(), json!(pod_mask));
        }
        out.push(document("KubeNetworkConfig", network));
    }
    let ca = take(main, &["cluster"], "ca");
    if let Some(ca) = ca {
        let cert = pem(ca.get("crt")).unwrap_or_default();
        out.push(document(
            "KubeAPIServerCAConfig",
            match pem(ca.get("key")) {
                Some(key) => json!({"issuingCA": {"cert": cert, "key": key}}),
                None => json!({"acceptedCAs": [cert]}),
            },
        ));
    }
    if let Some(prism) = take(main, &["machine", "features"], "kubePrism")
        && prism["enabled"].as_bool().unwrap_or(false)
    {
        out.push(document("KubePrismConfig", json!({"port": prism["port"]})));
    }
    out.extend(control_plane(main, endpoint));
    out
}

/// `KubeNodeConfig`: the node's IPs, labels, annotations and taints.
fn node(main: &mut Value, role: Role) -> Value {
    let node_ip = take(main, &["machine", "kubelet"], "nodeIP").unwrap_or_else(|| json!({}));
    let mut body = Map::new();
    body.insert("nodeIP".into(), node_ip);
    let mut labels = take(main, &["machine"], "nodeLabels")
        .and_then(|l| l.as_object().cloned())
        .unwrap_or_default();
    let mut taints = take(main, &["machine"], "nodeTaints")
        .and_then(|t| t.as_object().cloned())
        .unwrap_or_default();
    if role == Role::ControlPlane {
        labels.insert(CONTROL_PLANE_ROLE.into(), json!(""));
        taints.insert(CONTROL_PLANE_ROLE.into(), json!("NoSchedule"));
    }
    if let Some(annotations) = take(main, &["machine"], "nodeAnnotations") {
        body.insert("annotations".into(), annotations);
    }
    if !labels.is_empty() {
        body.insert("labels".into(), Value::Object(labels));
    }
    if !taints.is_empty() {
        body.insert("taints".into(), Value::Object(taints));
    }
    document("KubeNodeConfig", Value::Object(body))
}

/// `KubeletConfig`: the rest of `machine.kubelet` (which v1.14 refuses
/// beside it as a whole). Its manifests directory is always disabled.
fn kubelet(main: &mut Value) -> Option<Value> {
    let mut kubelet = take(main, &["machine"], "kubelet")?;
    let fields = kubelet.as_object_mut()?;
    fields.remove("disableManifestsDirectory");
    let mut body = Map::new();
    body.insert("image".into(), fields.remove("image").unwrap_or_default());
    body.insert(
        "config".into(),
        fields.remove("extraConfig").unwrap_or_else(|| json!({})),
    );
    for key in [
        "extraArgs",
        "clusterDNS",
        "defaultRuntimeSeccompProfileEnabled",
    ] {
        if let Some(value) = fields.remove(key) {
            body.insert(key.into(), value);
        }
    }
    Some(document("KubeletConfig", Value::Object(body)))
}

/// The control plane's own documents: the other CAs, the service-account
/// key, etcd encryption and the components (nothing for a worker, whose
/// v1alpha1 document has none of these fields).
fn control_plane(main: &mut Value, endpoint: Option<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(ca) = take(main, &["cluster"], "aggregatorCA") {
        out.push(document(
            "KubeAggregatorCAConfig",
            json!({"issuingCA": {"cert": pem(ca.get("crt")), "key": pem(ca.get("key"))}}),
        ));
    }
    if let Some(mut api_server) = take(main, &["cluster"], "apiServer") {
        out.extend(api_server_policies(&mut api_server));
        out.extend(encryption(main));
        if let Some(account) = take(main, &["cluster"], "serviceAccount") {
            out.push(document(
                "KubeServiceAccountConfig",
                json!({"issuer": {"privateKey": pem(account.get("key")), "issuerURL": endpoint}}),
            ));
        }
        let mut body = Map::new();
        body.insert("image".into(), api_server["image"].take());
        if let Some(extra) = api_server.get_mut("extraArgs").map(Value::take) {
            body.insert("extraArgs".into(), extra);
        }
        if let Some(sans) = api_server.get_mut("certSANs").map(Value::take) {
            body.insert("certExtraSANs".into(), sans);
        }
        out.push(document("KubeAPIServerConfig", Value::Object(body)));
    }
    if let Some(manager) = take(main, &["cluster"], "controllerManager") {
        out.push(document("KubeControllerManagerConfig", manager));
    }
    if let Some(mut scheduler) = take(main, &["cluster"], "scheduler") {
        scheduler["config"] = json!({});
        out.push(document("KubeSchedulerConfig", scheduler));
    }
    if let Some(proxy) = take(main, &["cluster"], "proxy") {
        let enabled = !proxy["disabled"].as_bool().unwrap_or(false);
        out.push(document(
            "KubeProxyConfig",
            json!({"enabled": enabled, "image": proxy["image"], "config": {}}),
        ));
        // CoreDNS stays as Talos deploys it by default.
        out.push(document("KubeCoreDNSConfig", json!({"enabled": true})));
    }
    out
}

/// Pod Security admission and the audit policy hct sets, and the
/// authenticator and authorizers Talos' v1.14 generator writes (what the
/// API server ran by default before).
fn api_server_policies(api_server: &mut Value) -> Vec<Value> {
    let mut out = Vec::new();
    let plugins = api_server
        .get_mut("admissionControl")
        .map(Value::take)
        .unwrap_or_default();
    for plugin in plugins.as_array().into_iter().flatten() {
        out.push(document(
            "KubeAdmissionControlConfig",
            json!({"name": plugin["name"], "configuration": plugin["configuration"]}),
        ));
    }
    if let Some(policy) = api_server.get_mut("auditPolicy").map(Value::take) {
        out.push(document(
            "KubeAuditPolicyConfig",
            json!({"configuration": policy}),
        ));
    }
    out.push(document(
        "KubeAuthenticationConfig",
        json!({"configuration": {
            "anonymous": {
                "conditions": [{"path": "/livez"}, {"path": "/readyz"}, {"path": "/healthz"}],
                "enabled": true,
            },
            "jwt": [],
        }}),
    ));
    for (name, kind) in [("node", "Node"), ("rbac", "RBAC")] {
        out.push(document(
            "KubeAuthorizerConfig",
            json!({"name": name, "type": kind}),
        ));
    }
    out
}

fn encryption(main: &mut Value) -> Option<Value> {
    let secretbox = take(main, &["cluster"], "secretboxEncryptionSecret");
    let aescbc = take(main, &["cluster"], "aescbcEncryptionSecret");
    let mut providers = Vec::new();
    if let Some(secret) = secretbox {
        providers.push(json!({"secretbox": {"keys": [{"name": "key2", "secret": secret}]}}));
    }
    if let Some(secret) = aescbc {
        providers.push(json!({"aescbc": {"keys": [{"name": "key1", "secret": secret}]}}));
    }
    (!providers.is_empty()).then(|| {
        document(
            "KubeEtcdEncryptionConfig",
            json!({"config": {"resources": [{"providers": providers, "resources": ["secrets"]}]}}),
        )
    })
}

/// The deprecated v1alpha1 fields each v1.14 document replaces (JSON
/// pointers), from Talos' `V1Alpha1ConflictValidate` rules: Talos refuses a
/// config with the document and any of its fields.
pub(crate) const REPLACED: &[(&str, &[&str])] = &[
    ("DiscoveryServiceConfig", &["/cluster/discovery"]),
    (
        "DiscoveryIdentityConfig",
        &["/cluster/id", "/cluster/secret"],
    ),
    (
        "ResolverConfig",
        &[
            "/machine/features/hostDNS",
            "/machine/network/nameservers",
            "/machine/network/searchDomains",
            "/machine/network/disableSearchDomain",
        ],
    ),
    ("UnattendedInstallConfig", &["/machine/install"]),
    (
        "KubeClusterConfig",
        &["/cluster/clusterName", "/cluster/controlPlane/endpoint"],
    ),
    (
        "KubeNodeConfig",
        &[
            "/machine/kubelet/nodeIP",
            "/machine/kubelet/registerWithFQDN",
            "/machine/kubelet/skipNodeRegistration",
            "/machine/nodeLabels",
            "/machine/nodeAnnotations",
            "/machine/nodeTaints",
            "/cluster/allowSchedulingOnControlPlanes",
            "/cluster/allowSchedulingOnMasters",
        ],
    ),
    ("KubeletConfig", &["/machine/kubelet"]),
    ("KubeNetworkConfig", &["/cluster/network"]),
    ("KubeAPIServerCAConfig", &["/cluster/ca"]),
    ("KubeAggregatorCAConfig", &["/cluster/aggregatorCA"]),
    ("KubeServiceAccountConfig", &["/cluster/serviceAccount"]),
    (
        "KubeEtcdEncryptionConfig",
        &[
            "/cluster/secretboxEncryptionSecret",
            "/cluster/aescbcEncryptionSecret",
        ],
    ),
    (
        "KubeAPIServerConfig",
        &[
            "/cluster/apiServer",
            "/cluster/controlPlane/localAPIServerPort",
        ],
    ),
    (
        "KubeAdmissionControlConfig",
        &["/cluster/apiServer/admissionControl"],
    ),
    // Talos' authorizer rule checks the v1alpha1 admission plugins.
    (
        "KubeAuthorizerConfig",
        &["/cluster/apiServer/admissionControl"],
    ),
    ("KubeAuditPolicyConfig", &["/cluster/apiServer/auditPolicy"]),
    (
        "KubeControllerManagerConfig",
        &[
            "/cluster/controllerManager",
            "/machine/controlPlane/controllerManager",
        ],
    ),
    (
        "KubeSchedulerConfig",
        &["/cluster/scheduler", "/machine/controlPlane/scheduler"],
    ),
    ("KubeProxyConfig", &["/cluster/proxy"]),
    ("KubeCoreDNSConfig", &["/cluster/coreDNS"]),
    ("KubePrismConfig", &["/machine/features/kubePrism"]),
];

/// The first document of `documents` set together with a v1alpha1 field it
/// replaces: (kind, the field as a dotted path).
pub(crate) fn conflict(documents: &[Value]) -> Option<(&'static str, String)> {
    let main = v1alpha1(documents)?;
    REPLACED.iter().find_map(|(kind, fields)| {
        of_kind(documents, kind)?;
        let field = fields.iter().find(|f| main.pointer(f).is_some())?;
        Some((*kind, field[1..].replace('/', ".")))
    })
}

/// A setting of a config, read as Talos v1.14 reads it: from its document
/// when the config has one, else from the deprecated v1alpha1 field (the
/// only place before v1.14). Also names where it was found, for messages.
pub(crate) fn setting<'a>(
    documents: &'a [Value],
    main: &'a Value,
    (kind, in_document): (&str, &str),
    legacy: &str,
) -> (Option<&'a Value>, String) {
    match of_kind(documents, kind) {
        Some(document) => (
            document.pointer(in_document),
            format!("{kind}{}", in_document.replace('/', ".")),
        ),
        None => (main.pointer(legacy), legacy[1..].replace('/', ".")),
    }
}

/// The control-plane endpoint a config names, in either form.
pub(crate) fn endpoint(documents: &[Value]) -> Option<&str> {
    let main = v1alpha1(documents)?;
    setting(
        documents,
        main,
        ("KubeClusterConfig", "/endpoint"),
        "/cluster/controlPlane/endpoint",
    )
    .0?
    .as_str()
}

/// A v1.14 `KubeInlineManifestConfig` document.
pub(crate) fn inline_manifest(name: &str, manifest: &str) -> Value {
    document(
        "KubeInlineManifestConfig",
        json!({"name": name, "manifest": manifest}),
    )
}
