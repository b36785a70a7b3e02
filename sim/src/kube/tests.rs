use std::net::IpAddr;

use serde_json::{Value, json};

use super::api::{Answer, ApiRequest, handle};
use super::csr;
use super::nodes::{self, NodeFacts};
use super::store::ClusterStore;

fn request<'a>(method: &'a str, path: &'a str, query: &'a str, body: &'a [u8]) -> ApiRequest<'a> {
    ApiRequest {
        method,
        path,
        query,
        content_type: Some("application/json"),
        body,
        server_address: "10.0.128.17:6443",
    }
}

fn call(store: &mut ClusterStore, method: &str, path: &str, query: &str, body: &Value) -> Answer {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    handle(store, &request(method, path, query, &body))
}

fn apply(store: &mut ClusterStore, path: &str, query: &str, yaml: &str) -> Answer {
    let mut r = request("PATCH", path, query, yaml.as_bytes());
    r.content_type = Some("application/apply-patch+yaml");
    handle(store, &r)
}

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

fn ready(store: &mut ClusterStore, node: &str) -> String {
    let node = call(
        store,
        "GET",
        &format!("/api/v1/nodes/{node}"),
        "",
        &Value::Null,
    )
    .body;
    node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn discovery_lists_groups_and_resources() {
    let mut store = ClusterStore::new(1_700_000_000);
    let api = call(&mut store, "GET", "/api", "", &Value::Null);
    assert_eq!(api.body["versions"], json!(["v1"]));
    let groups = call(&mut store, "GET", "/apis", "", &Value::Null).body;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"apps") && names.contains(&"certificates.k8s.io"),
        "{names:?}"
    );
    let core = call(&mut store, "GET", "/api/v1", "", &Value::Null).body;
    let nodes = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nodes")
        .unwrap();
    assert_eq!(nodes["namespaced"], false);
    assert_eq!(nodes["kind"], "Node");
    let certs = call(
        &mut store,
        "GET",
        "/apis/certificates.k8s.io/v1",
        "",
        &Value::Null,
    )
    .body;
    assert!(
        certs["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "certificatesigningrequests/approval")
    );
    assert_eq!(
        call(
            &mut store,
            "GET",
            "/apis/nothing.example.com/v1",
            "",
            &Value::Null
        )
        .code,
        404
    );
    assert_eq!(call(&mut store, "POST", "/api", "", &json!({})).code, 405);

    // OpenAPI v3: kubectl finds fieldValidation on each PATCH.
    let root = call(&mut store, "GET", "/openapi/v3", "", &Value::Null).body;
    let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="), "{url}");
    let (path, query) = url.split_once('?').unwrap();
    let apps = call(&mut store, "GET", path, query, &Value::Null).body;
    let patch = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"]["kind"],
        "DaemonSet"
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    assert_eq!(
        call(
            &mut store,
            "GET",
            "/openapi/v3/apis/nothing/v1",
            "",
            &Value::Null
        )
        .code,
        404
    );

    // A CRD adds its kind.
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions: [{name: v1, served: true, storage: true}]\n";
    assert_eq!(
        apply(
            &mut store,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            "fieldManager=t",
            crd
        )
        .code,
        201
    );
    let example = call(&mut store, "GET", "/apis/example.com/v1", "", &Value::Null);
    assert_eq!(example.code, 200);
    assert_eq!(example.body["resources"][0]["kind"], "Widget");
}

#[test]
fn creates_gets_lists_and_deletes_with_kube_apiserver_statuses() {
    let mut store = ClusterStore::new(1_700_000_000);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hcloud", "labels": {"app": "ccm"}}, "data": {"token": "eA=="}});
    let created = call(
        &mut store,
        "POST",
        "/api/v1/namespaces/kube-system/secrets",
        "",
        &secret,
    );
    assert_eq!(created.code, 201, "{:?}", created.body);
    assert_eq!(created.body["metadata"]["namespace"], "kube-system");
    assert!(created.body["metadata"]["uid"].is_string());
    let again = call(
        &mut store,
        "POST",
        "/api/v1/namespaces/kube-system/secrets",
        "",
        &secret,
    );
    assert_eq!(again.code, 409);
    assert_eq!(again.body["reason"], "AlreadyExists");
    assert_eq!(again.body["message"], "secrets \"hcloud\" already exists");
    assert_eq!(
        again.body["details"],
        json!({"name": "hcloud", "kind": "secrets"})
    );

    let missing = call(
        &mut store,
        "GET",
        "/apis/apps/v1/namespaces/kube-system/daemonsets/cilium",
        "",
        &Value::Null,
    );
    assert_eq!(missing.code, 404);
    assert_eq!(
        missing.body["message"],
        "daemonsets.apps \"cilium\" not found"
    );
    assert_eq!(
        missing.body["details"],
        json!({"name": "cilium", "group": "apps", "kind": "daemonsets"})
    );

    let no_namespace = call(
        &mut store,
        "POST",
        "/api/v1/namespaces/nope/secrets",
        "",
        &secret,
    );
    assert_eq!(no_namespace.code, 404);
    assert_eq!(
        no_namespace.body["message"],
        "namespaces \"nope\" not found"
    );

    let bad_name = json!({"metadata": {"name": "Not_Valid"}});
    let invalid = call(
        &mut store,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "",
        &bad_name,
    );
    assert_eq!(invalid.code, 422);
    assert_eq!(invalid.body["reason"], "Invalid");
    assert_eq!(invalid.body["details"]["kind"], "ConfigMap");
    assert_eq!(
        invalid.body["details"]["causes"][0]["field"],
        "metadata.name"
    );

    let list = call(
        &mut store,
        "GET",
        "/api/v1/secrets",
        "labelSelector=app%3Dccm",
        &Value::Null,
    )
    .body;
    assert_eq!(list["kind"], "SecretList");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let none = call(
        &mut store,
        "GET",
        "/api/v1/namespaces/default/secrets",
        "labelSelector=app%3Dccm",
        &Value::Null,
    )
    .body;
    assert_eq!(none["items"], json!([]));
    let by_name = call(
        &mut store,
        "GET",
        "/api/v1/namespaces/kube-system/secrets",
        "fieldSelector=metadata.name%3Dother",
        &Value::Null,
    )
    .body;
    assert_eq!(by_name["items"], json!([]));

    // A stale resourceVersion is a Conflict.
    let mut stale = created.body.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let conflict = call(
        &mut store,
        "PUT",
        "/api/v1/namespaces/kube-system/secrets/hcloud",
        "",
        &stale,
    );
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.body["reason"], "Conflict");

    let deleted = call(
        &mut store,
        "DELETE",
        "/api/v1/namespaces/kube-system/secrets/hcloud",
        "",
        &Value::Null,
    );
    assert_eq!(deleted.code, 200);
    assert_eq!(deleted.body["status"], "Success");
    assert_eq!(
        call(
            &mut store,
            "DELETE",
            "/api/v1/namespaces/kube-system/secrets/hcloud",
            "",
            &Value::Null
        )
        .code,
        404
    );

    // Deleting a namespace takes its objects.
    call(
        &mut store,
        "POST",
        "/api/v1/namespaces",
        "",
        &json!({"metadata": {"name": "tmp"}}),
    );
    call(
        &mut store,
        "POST",
        "/api/v1/namespaces/tmp/configmaps",
        "",
        &json!({"metadata": {"name": "c"}}),
    );
    call(
        &mut store,
        "DELETE",
        "/api/v1/namespaces/tmp",
        "",
        &Value::Null,
    );
    assert_eq!(
        call(&mut store, "GET", "/api/v1/configmaps", "", &Value::Null).body["items"],
        json!([])
    );
}

#[test]
fn server_side_apply_owns_fields_and_conflicts_without_force() {
    let mut store = ClusterStore::new(1_700_000_000);
    let path = "/api/v1/namespaces/default/configmaps/c";
    let first = apply(
        &mut store,
        path,
        "fieldManager=hct",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '1', b: '2'}\n",
    );
    assert_eq!(first.code, 201, "{:?}", first.body);
    assert_eq!(first.body["metadata"]["managedFields"][0]["manager"], "hct");
    assert_eq!(
        first.body["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    assert_eq!(
        first.body["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );

    // Applying again without b drops b; a changed value lands.
    let second = apply(
        &mut store,
        path,
        "fieldManager=hct",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '3'}\n",
    );
    assert_eq!(second.code, 200);
    assert_eq!(second.body["data"], json!({"a": "3"}));

    // Another manager changing a is a conflict, unless forced.
    let other = apply(
        &mut store,
        path,
        "fieldManager=kubectl",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '4'}\n",
    );
    assert_eq!(other.code, 409);
    assert_eq!(other.body["reason"], "Conflict");
    assert_eq!(other.body["details"]["causes"][0]["field"], ".data.a");
    let same = apply(
        &mut store,
        path,
        "fieldManager=kubectl",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '3', z: '0'}\n",
    );
    assert_eq!(
        same.code, 200,
        "the same value is shared, not a conflict: {:?}",
        same.body
    );
    let forced = apply(
        &mut store,
        path,
        "fieldManager=kubectl&force=true",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '4'}\n",
    );
    assert_eq!(forced.code, 200);
    assert_eq!(forced.body["data"]["a"], "4");

    let no_manager = apply(
        &mut store,
        path,
        "",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    assert_eq!(no_manager.code, 400);
    let wrong_kind = apply(
        &mut store,
        path,
        "fieldManager=hct",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: c}\n",
    );
    assert_eq!(wrong_kind.code, 400);

    // Merge patches.
    let mut patch = request("PATCH", path, "", br#"{"data":{"m":"1","z":null}}"#);
    patch.content_type = Some("application/merge-patch+json");
    let patched = handle(&mut store, &patch);
    assert_eq!(patched.code, 200);
    assert_eq!(patched.body["data"]["m"], "1");
    assert!(patched.body["data"].get("z").is_none());
    patch.content_type = Some("application/json-patch+json");
    assert_eq!(handle(&mut store, &patch).code, 415);
}

#[test]
fn nodes_register_get_ready_with_a_cni_and_file_serving_csrs() {
    let mut store = ClusterStore::new(1_700_000_000);
    let mut cp = fact("cp-1", "10.0.128.17", true);
    let mut waiting = fact("w-1", "10.0.128.33", false);
    waiting.kubelet_running = false;
    nodes::sync(&mut store, &[cp.clone(), waiting.clone()]);
    let list = call(&mut store, "GET", "/api/v1/nodes", "", &Value::Null).body;
    assert_eq!(
        list["items"].as_array().unwrap().len(),
        1,
        "only running kubelets register"
    );
    let node = &list["items"][0];
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.35.2");
    assert_eq!(
        node["status"]["addresses"][0],
        json!({"type": "InternalIP", "address": "10.0.128.17"})
    );
    assert_eq!(
        node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"],
        ""
    );
    assert_eq!(ready(&mut store, "cp-1"), "False");

    let pods = call(
        &mut store,
        "GET",
        "/api/v1/namespaces/kube-system/pods",
        "",
        &Value::Null,
    )
    .body;
    let names: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "kube-apiserver-cp-1",
            "kube-controller-manager-cp-1",
            "kube-scheduler-cp-1"
        ]
    );

    // A DaemonSet that is no CNI changes nothing; cilium's does.
    let other = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: node-exporter, namespace: kube-system}\nspec: {}\n";
    apply(
        &mut store,
        "/apis/apps/v1/namespaces/kube-system/daemonsets/node-exporter",
        "fieldManager=t",
        other,
    );
    nodes::sync(&mut store, &[cp.clone(), waiting.clone()]);
    assert_eq!(ready(&mut store, "cp-1"), "False");
    let cilium = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: cilium, namespace: kube-system}\nspec: {}\n";
    assert_eq!(
        apply(
            &mut store,
            "/apis/apps/v1/namespaces/kube-system/daemonsets/cilium",
            "fieldManager=t",
            cilium
        )
        .code,
        201
    );
    waiting.kubelet_running = true;
    nodes::sync(&mut store, &[cp.clone(), waiting.clone()]);
    assert_eq!(ready(&mut store, "cp-1"), "True");
    assert_eq!(ready(&mut store, "w-1"), "True");

    cp.kubelet_running = false;
    nodes::sync(&mut store, &[cp.clone(), waiting.clone()]);
    assert_eq!(ready(&mut store, "cp-1"), "Unknown");
    nodes::sync(&mut store, &[waiting.clone()]);
    assert_eq!(
        call(&mut store, "GET", "/api/v1/nodes/cp-1", "", &Value::Null).code,
        404,
        "its server is gone"
    );

    let csrs = call(
        &mut store,
        "GET",
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        "",
        &Value::Null,
    )
    .body;
    let csrs = csrs["items"].as_array().unwrap();
    assert_eq!(csrs.len(), 2, "one per node");
    let w1 = csrs
        .iter()
        .find(|c| c["spec"]["username"] == "system:node:w-1")
        .unwrap();
    assert_eq!(w1["spec"]["signerName"], csr::KUBELET_SERVING);
    assert!(csr::is_pending(w1));
    let requested = csr::requested(w1).unwrap();
    assert_eq!(requested.dns_names, ["w-1"]);
    assert_eq!(requested.ips, ["10.0.128.33".parse::<IpAddr>().unwrap()]);
    assert!(csr::safe_to_approve(
        w1,
        Some("10.0.128.33".parse().unwrap())
    ));
    assert!(
        !csr::safe_to_approve(w1, Some("10.0.128.34".parse().unwrap())),
        "another IP"
    );
    assert!(!csr::safe_to_approve(w1, None), "no such node");

    // Approval through the subresource, as kubectl certificate approve does.
    let name = w1["metadata"]["name"].as_str().unwrap();
    let mut approved = w1.clone();
    csr::add_condition(
        &mut approved,
        "Approved",
        "KubectlApprove",
        "This CSR was approved by kubectl certificate approve.",
        "2026-01-01T00:00:00Z",
    );
    approved["spec"]["username"] = json!("someone-else");
    let path = format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval");
    let answer = call(&mut store, "PUT", &path, "", &approved);
    assert_eq!(answer.code, 200, "{:?}", answer.body);
    assert!(csr::is_approved(&answer.body));
    assert_eq!(
        answer.body["spec"]["username"], "system:node:w-1",
        "approval changes only the conditions"
    );
}

#[test]
fn static_pods_and_kubelet_versions_follow_each_node() {
    let mut store = ClusterStore::new(1_700_000_000);
    let mut cp = fact("cp-1", "10.0.128.17", true);
    nodes::sync(&mut store, std::slice::from_ref(&cp));
    let image = |store: &mut ClusterStore, pod: &str| {
        let path = format!("/api/v1/namespaces/kube-system/pods/{pod}");
        call(store, "GET", &path, "", &Value::Null).body["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // The API server moves first; the others follow their own images.
    cp.static_pod_versions[0] = "v1.36.3".into();
    nodes::sync(&mut store, std::slice::from_ref(&cp));
    assert_eq!(
        image(&mut store, "kube-apiserver-cp-1"),
        "registry.k8s.io/kube-apiserver:v1.36.3"
    );
    assert_eq!(
        image(&mut store, "kube-scheduler-cp-1"),
        "registry.k8s.io/kube-scheduler:v1.35.2"
    );
    cp.kubelet_version = "v1.36.3".into();
    nodes::sync(&mut store, std::slice::from_ref(&cp));
    let node = call(&mut store, "GET", "/api/v1/nodes/cp-1", "", &Value::Null).body;
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.36.3");
}

#[test]
fn a_csr_with_a_foreign_san_is_not_safe() {
    let ip: IpAddr = "10.0.128.33".parse().unwrap();
    let mut foreign = csr::kubelet_csr("w-1", ip);
    let pem_text = csr::request_pem("w-1", &["w-1", "cp-1"], &[ip]);
    foreign["spec"]["request"] = json!(base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        pem_text
    ));
    assert!(!csr::safe_to_approve(&foreign, Some(ip)));
    let mut other_requester = csr::kubelet_csr("w-1", ip);
    other_requester["spec"]["username"] = json!("system:node:w-2");
    assert!(!csr::safe_to_approve(&other_requester, Some(ip)));
    let mut other_signer = csr::kubelet_csr("w-1", ip);
    other_signer["spec"]["signerName"] = json!("kubernetes.io/kube-apiserver-client-kubelet");
    assert!(!csr::safe_to_approve(&other_signer, Some(ip)));
}

#[test]
fn bootstrap_manifests_create_only_what_is_missing() {
    let parsed = |text: &str| -> Vec<(String, Value)> {
        super::manifests::objects(text)
            .unwrap()
            .into_iter()
            .map(|o| ("m".to_string(), o))
            .collect()
    };
    let mut store = ClusterStore::new(1_700_000_000);
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: extra}\ndata: {a: '1'}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: extra}\n---\n";
    let problems = super::manifests::create_missing(&mut store, parsed(text));
    assert_eq!(problems, Vec::<String>::new());
    let c = call(
        &mut store,
        "GET",
        "/api/v1/namespaces/extra/configmaps/c",
        "",
        &Value::Null,
    );
    assert_eq!(c.body["data"]["a"], "1", "the namespace came first");
    let changed = text.replace("a: '1'", "a: '2'");
    super::manifests::create_missing(&mut store, parsed(&changed));
    let c = call(
        &mut store,
        "GET",
        "/api/v1/namespaces/extra/configmaps/c",
        "",
        &Value::Null,
    );
    assert_eq!(c.body["data"]["a"], "1", "existing objects are left alone");
    let unknown = super::manifests::create_missing(
        &mut store,
        parsed("apiVersion: nope/v1\nkind: Thing\nmetadata: {name: t}\n"),
    );
    assert_eq!(unknown, ["no resource serves nope/v1 Thing"]);
}

#[test]
fn rbac_names_may_hold_colons_other_names_may_not() {
    let mut store = ClusterStore::new(1_700_000_000);
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let role = |name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": []})
    };
    let created = call(&mut store, "POST", roles, "", &role("system:coredns"));
    assert_eq!(created.code, 201, "{}", created.body);
    let refused = call(&mut store, "POST", roles, "", &role("a/b"));
    assert_eq!(refused.code, 422, "{}", refused.body);
    let map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "system:coredns", "namespace": "default"}});
    let refused = call(
        &mut store,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "",
        &map,
    );
    assert_eq!(refused.code, 422, "{}", refused.body);
}

#[test]
fn a_dry_run_answers_as_the_write_would_and_keeps_nothing() {
    let mut store = ClusterStore::new(0);
    let path = "/api/v1/namespaces/default/configmaps/c";
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"1\"\n";
    let dry = apply(&mut store, path, "fieldManager=hct&dryRun=All", yaml);
    assert_eq!((dry.code, &dry.body["data"]), (201, &json!({"a": "1"})));
    assert_eq!(call(&mut store, "GET", path, "", &Value::Null).code, 404);
    assert_eq!(apply(&mut store, path, "fieldManager=hct", yaml).code, 201);
    let changed = yaml.replace("\"1\"", "\"2\"");
    let dry = apply(&mut store, path, "fieldManager=hct&dryRun=All", &changed);
    assert_eq!(dry.body["data"]["a"], "2");
    let live = call(&mut store, "GET", path, "", &Value::Null);
    assert_eq!(live.body["data"]["a"], "1");
}
