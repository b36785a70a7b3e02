use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::*;
use crate::kube::nodes::{self, NodeFacts};

fn fact(name: &str, ip: &str, control_plane: bool) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        ip: ip.parse().unwrap(),
        control_plane,
        kubelet_running: true,
        kubelet_version: "v1.35.2".into(),
        static_pod_versions: ["v1.35.2".into(), "v1.35.2".into(), "v1.35.2".into()],
        os_image: "Talos (v1.12.6)".into(),
        arch: "amd64",
    }
}

/// An approver Deployment as a user (or hct) would write it: only the
/// container's image, args and env matter to the sim.
fn approver(env: &[(&str, &str)]) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "approver", "namespace": "kube-system"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{
            "name": "approver",
            "image": "ghcr.io/postfinance/kubelet-csr-approver:v1.2.14",
            "args": ["-metrics-bind-address=0"],
            "env": env.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
        }]}}},
    })
}

const STRICT: [(&str, &str); 4] = [
    ("PROVIDER_REGEX", "^(?:c-cp-1|c-w-1)$"),
    ("PROVIDER_IP_PREFIXES", "10.0.128.17/32,10.0.128.33/32"),
    ("BYPASS_DNS_RESOLUTION", "true"),
    ("SKIP_DENY_STEP", "true"),
];

fn store_with(deployment: Option<Value>) -> ClusterStore {
    let mut store = ClusterStore::new(1_700_000_000);
    if let Some(deployment) = deployment {
        let deployments = resource(&store, "apps", "deployments");
        store
            .create(&deployments, "kube-system", deployment, "test")
            .unwrap();
    }
    store
}

fn csrs(store: &ClusterStore) -> Vec<Value> {
    let csrs = resource(store, "certificates.k8s.io", "certificatesigningrequests");
    store
        .list(&csrs, None, &Default::default(), &[])
        .into_iter()
        .cloned()
        .collect()
}

fn with_request(mut csr: Value, node: &str, names: &[&str], ips: &[IpAddr]) -> Value {
    csr["spec"]["request"] = json!(STANDARD.encode(csr::request_pem(node, names, ips)));
    csr
}

#[test]
fn without_an_approver_csrs_stay_pending() {
    let mut store = store_with(None);
    nodes::sync(&mut store, &[fact("c-cp-1", "10.0.128.17", true)]);
    let all = csrs(&store);
    assert_eq!(all.len(), 1);
    assert!(csr::is_pending(&all[0]));
}

#[test]
fn the_approver_approves_each_nodes_own_csr() {
    let mut store = store_with(Some(approver(&STRICT)));
    let nodes = [
        fact("c-cp-1", "10.0.128.17", true),
        fact("c-w-1", "10.0.128.33", false),
    ];
    nodes::sync(&mut store, &nodes);
    let all = csrs(&store);
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(csr::is_approved), "{all:#?}");
}

#[test]
fn no_control_plane_to_run_on_no_approval() {
    let mut store = store_with(Some(approver(&STRICT)));
    nodes::sync(&mut store, &[fact("c-w-1", "10.0.128.33", false)]);
    assert!(csr::is_pending(&csrs(&store)[0]));
}

#[test]
fn foreign_names_ips_and_requesters_stay_pending() {
    let rule = Rule::of(&approver(&STRICT)["spec"]["template"]["spec"]["containers"][0]).unwrap();
    let ip: IpAddr = "10.0.128.33".parse().unwrap();
    let own = csr::kubelet_csr("c-w-1", ip);
    assert_eq!(rule.verdict(&own), Verdict::Approve);
    let foreign_ip = with_request(
        own.clone(),
        "c-w-1",
        &["c-w-1"],
        &["10.0.128.99".parse().unwrap()],
    );
    assert!(matches!(rule.verdict(&foreign_ip), Verdict::Deny(_)));
    let foreign_name = with_request(own.clone(), "c-w-1", &["c-w-1.evil"], &[ip]);
    assert!(matches!(rule.verdict(&foreign_name), Verdict::Deny(_)));
    let two_names = with_request(own.clone(), "c-w-1", &["c-w-1", "c-cp-1"], &[ip]);
    assert!(matches!(rule.verdict(&two_names), Verdict::Deny(_)));
    // Filed by another node for c-w-1's name: CN and username differ.
    let mut other = own.clone();
    other["spec"]["username"] = json!("system:node:c-cp-1");
    assert!(matches!(rule.verdict(&other), Verdict::Deny(_)));
    // Another node asking in its own name for c-w-1's DNS name.
    let claim = with_request(own.clone(), "c-cp-1", &["c-w-1"], &[ip]);
    let mut claim = claim;
    claim["spec"]["username"] = json!("system:node:c-cp-1");
    assert!(matches!(rule.verdict(&claim), Verdict::Deny(_)));

    // With SKIP_DENY_STEP the failures stay pending in the store.
    let mut store = store_with(Some(approver(&STRICT)));
    let csrs_resource = resource(&store, "certificates.k8s.io", "certificatesigningrequests");
    for (n, request) in [foreign_ip, foreign_name, other].into_iter().enumerate() {
        let mut request = request;
        request["metadata"]["name"] = json!(format!("csr-{n}"));
        store
            .create(&csrs_resource, "", request, "kubelet")
            .unwrap();
    }
    run(&mut store, true);
    let all = csrs(&store);
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(csr::is_pending), "{all:#?}");
}

#[test]
fn defaults_and_denials_follow_the_approvers_own() {
    // Without BYPASS_DNS_RESOLUTION a DNS name must resolve: never here.
    let container = &approver(&[])["spec"]["template"]["spec"]["containers"][0];
    let rule = Rule::of(container).unwrap();
    let ip: IpAddr = "10.0.128.33".parse().unwrap();
    assert!(matches!(
        rule.verdict(&csr::kubelet_csr("c-w-1", ip)),
        Verdict::Deny(_)
    ));
    let ip_only = with_request(csr::kubelet_csr("c-w-1", ip), "c-w-1", &[], &[ip]);
    assert_eq!(
        rule.verdict(&ip_only),
        Verdict::Approve,
        "any IP by default"
    );
    // Denied (no SKIP_DENY_STEP): a Denied condition is written.
    let mut store = store_with(Some(approver(&[])));
    nodes::sync(&mut store, &[fact("c-cp-1", "10.0.128.17", true)]);
    let all = csrs(&store);
    assert!(!csr::is_pending(&all[0]) && !csr::is_approved(&all[0]));
    // Flags win over env; a bad regex keeps the approver from starting.
    let mut flagged = approver(&[("PROVIDER_REGEX", "^x$")]);
    flagged["spec"]["template"]["spec"]["containers"][0]["args"] =
        json!(["-provider-regex", "^c-w-1$", "-bypass-dns-resolution"]);
    let rule = Rule::of(&flagged["spec"]["template"]["spec"]["containers"][0]).unwrap();
    assert_eq!(
        rule.verdict(&csr::kubelet_csr("c-w-1", ip)),
        Verdict::Approve
    );
    let broken = approver(&[("PROVIDER_REGEX", "(")]);
    assert!(Rule::of(&broken["spec"]["template"]["spec"]["containers"][0]).is_none());
}
