//! The shipped reference example, `examples/private-cluster`, in a workspace
//! pointed at a seeded hct-sim, and reading its state back.

use hct_sim::SimHandle;

use super::Workspace;

pub const EXAMPLE: &str = include_str!("../../examples/private-cluster/main.tf");

/// A CNI as hct-sim sees one (a DaemonSet named cilium, and its
/// ConfigMap); it runs nothing, the emulated nodes turn Ready.
pub const CNI_MANIFEST: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cilium
  namespace: kube-system
  labels:
    k8s-app: cilium
spec:
  selector:
    matchLabels:
      k8s-app: cilium
  template:
    metadata:
      labels:
        k8s-app: cilium
    spec:
      containers:
        - name: cilium-agent
          image: quay.io/cilium/cilium:v1.18.4
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cilium-config
  namespace: kube-system
data:
  ipam: kubernetes
  tunnel: disabled
";

/// `cni_manifest` as tfvars JSON, with a `label` line among the DaemonSet's
/// labels: a new config for every control plane.
pub fn cni_tfvars(label: &str) -> String {
    let manifest = CNI_MANIFEST.replace(
        "k8s-app: cilium\nspec:",
        &format!("k8s-app: cilium\n    {label}\nspec:"),
    );
    serde_json::json!({ "cni_manifest": manifest }).to_string()
}

/// A test key: the age identity of the reference workspace's etcd
/// snapshots, and its recipient.
pub const SNAPSHOT_IDENTITY: &str =
    "AGE-SECRET-KEY-1SL0PA5R82AG425CKEK6F5VVF7T7G3ACNP7GRTWGA7HXXE8PNUGXS5M9ETG";
const SNAPSHOT_RECIPIENT: &str = "age1sxfzqgu7k66rpk87eccfvmg2dx8dzd774y8wk64rsahxteudn4zqr8vpz8";

/// The etcd snapshots the example wrote (`etcd-snapshots/*.etcd.age`), by
/// file name, decrypted with [`SNAPSHOT_IDENTITY`].
pub fn snapshots(ws: &Workspace) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    use std::str::FromStr;
    let identity = age::x25519::Identity::from_str(SNAPSHOT_IDENTITY).expect("a test identity");
    let Ok(entries) = std::fs::read_dir(ws.path().join("etcd-snapshots")) else {
        return Vec::new();
    };
    let mut found: Vec<(String, Vec<u8>)> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.to_string_lossy().ends_with(".etcd.age"))
        .map(|path| {
            let file = std::fs::File::open(&path).expect("a snapshot");
            let decryptor = age::Decryptor::new(file).expect("an age file");
            let mut plain = Vec::new();
            decryptor
                .decrypt(std::iter::once(&identity as &dyn age::Identity))
                .expect("encrypted to the test key")
                .read_to_end(&mut plain)
                .expect("decrypted");
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, plain)
        })
        .collect();
    found.sort();
    found
}

/// What the Talos API streams as an etcd snapshot: the database, then its
/// SHA-256 (as etcd's Maintenance API gives it).
pub fn assert_etcd_snapshot(snapshot: &[u8]) {
    use sha2::Digest;
    assert!(snapshot.len() > 32, "{} bytes", snapshot.len());
    let (database, hash) = snapshot.split_at(snapshot.len() - 32);
    assert_eq!(
        sha2::Sha256::digest(database).as_slice(),
        hash,
        "etcd's hash"
    );
}

/// The reference layout with `general` nodes in the general pool.
pub fn pools(general: u32) -> String {
    pools_labelled(general, r#"{ purpose = "platform" }"#)
}

pub fn pools_labelled(general: u32, platform_labels: &str) -> String {
    format!(
        r#"worker_pools = {{
  platform = {{ cidr = "10.0.128.32/27", nodes = 3, sku = "cx33", labels = {platform_labels} }}
  general  = {{ cidr = "10.0.128.64/27", nodes = {general}, sku = "cx23", labels = {{ purpose = "general" }} }}
}}
"#
    )
}

/// The example with three nodes per pool and the first control plane as the
/// API endpoint, on the sim's seeded network, with the provider polling
/// fast.
pub fn workspace(sim: &SimHandle) -> Workspace {
    let mut ws = Workspace::dev_override(&[("main.tf", EXAMPLE)]);
    ws.write("pools.auto.tfvars", &pools(3));
    // Upgrades and other risky changes write an etcd snapshot first.
    ws.write(
        "etcd.auto.tfvars",
        &format!("etcd_snapshot_recipients = [\"{SNAPSHOT_RECIPIENT}\"]\n"),
    );
    // The example's default is the load balancer; the suites built on this
    // workspace test the other mode, and tests/e2e/endpoint_e2e.rs this one.
    ws.write(
        "endpoint.auto.tfvars",
        "api_endpoint = \"first_control_plane\"\n",
    );
    ws.write(
        "network.auto.tfvars",
        &format!("network_id = {}\n", super::sim::seeded_network(sim)),
    );
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url())
        .env("HCT_POLL_INTERVAL", "50ms");
    ws
}

/// A resource's values in state, from `terraform show -json` (sensitive
/// ones included).
pub fn resource_values(ws: &Workspace, address: &str) -> serde_json::Value {
    let out = ws
        .terraform(&["show", "-json"])
        .expect_success("show -json");
    let state: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    state["values"]["root_module"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["address"] == address)
        .map(|r| r["values"].clone())
        .unwrap_or_default()
}

pub fn state_attribute(ws: &Workspace, address: &str, name: &str) -> String {
    resource_values(ws, address)[name]
        .as_str()
        .unwrap_or_else(|| panic!("{address}.{name} not in state"))
        .to_string()
}

/// After a lost state: imports the reference workspace's image, cluster
/// and pools (with the secrets already in its configuration), and checks
/// that the plan then replaces and destroys nothing.
pub fn import_reference(ws: &Workspace, image: &str) {
    ws.terraform(&["import", "hct_talos_image.this", image])
        .expect_success("import the image");
    ws.terraform(&["import", "hct_cluster.this", "noreturn"])
        .expect_success("import the cluster");
    for pool in ["platform", "general"] {
        let address = format!("hct_worker_pool.this[\"{pool}\"]");
        ws.terraform(&["import", &address, &format!("noreturn/{pool}")])
            .expect_success(&format!("import {pool}"));
    }
    // The plan after the import adds hct_cluster_secrets (it has no remote
    // object: made from the same secrets, it changes nothing) and
    // re-applies the configs (an import cannot read them back without the
    // secrets); it replaces and destroys nothing.
    let (_, out) = super::plan_exit_code(ws, &["-no-color"]);
    assert!(
        out.stdout.contains("0 to destroy") && !out.stdout.contains("replace"),
        "nothing is replaced after the import\n{out}"
    );
}

/// After a restore of the reference cluster from the snapshot whose
/// encrypted file is `encrypted`: state records that file's SHA-256 (so it
/// is never restored again), one etcd of the three control planes runs, and
/// `ready_nodes` reaches all 9 nodes.
pub fn assert_restored(
    sim: &SimHandle,
    ws: &Workspace,
    encrypted: &std::path::Path,
    ready_nodes: impl Fn() -> usize,
) {
    use sha2::Digest;
    let digest = format!(
        "sha256:{:x}",
        sha2::Sha256::digest(std::fs::read(encrypted).unwrap())
    );
    assert_eq!(
        state_attribute(ws, "hct_cluster.this", "restored_snapshot_sha256"),
        digest
    );
    super::sim::assert_one_etcd_of_three(sim, "the restore");
    super::eventually("9 Ready nodes", || {
        let ready = ready_nodes();
        (ready == 9).then_some(()).ok_or(ready)
    });
}
