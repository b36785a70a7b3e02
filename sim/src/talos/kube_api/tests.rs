use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::http::{Head, MAX_HEAD, Reply, read_head};
use super::routes::{Served, answer};
use super::version::KubernetesVersion;
use super::*;
use crate::ids::Id;
use crate::resources::servers::Power;
use crate::talos::auth::Caller;
use crate::talos::calls;
use crate::talos::faults::{ServerRef, TalosFault};
use crate::talos::testing::{Lab, cluster, control_plane, worker};
use crate::talos::version::TalosVersion;

const MOMENT: Duration = Duration::from_millis(10);

fn spec_of(lab: &Lab, id: Id) -> Option<KubeApiSpec> {
    spec(&lab.world, &lab.world.servers[&id])
}

fn ready(lab: &Lab, id: Id) -> Result<(), String> {
    readiness(&lab.world, lab.at(id))
}

/// Control planes of one cluster at 10.0.128.11, .12, …; the first
/// bootstrapped and all joined.
fn control_planes(lab: &mut Lab, count: u8) -> Vec<Id> {
    let config = cluster().machine_config(&control_plane());
    let ids: Vec<Id> = (1..=count)
        .map(|n| {
            lab.server(
                &format!("cp-{n}"),
                &format!("10.0.128.{}", 10 + n),
                "v1.12.6",
                Some(config.clone()),
            )
        })
        .collect();
    lab.settle();
    lab.on(ids[0], |w, at, _| calls::bootstrap(w, at)).unwrap();
    for _ in 0..count {
        lab.tick(MOMENT);
    }
    ids
}

#[test]
fn serves_on_control_planes_once_their_etcd_member_runs() {
    let mut lab = Lab::new();
    let sample = cluster();
    let config = sample.machine_config(&control_plane());
    let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
    let w = lab.server(
        "w-1",
        "10.0.128.20",
        "v1.12.6",
        Some(sample.machine_config(&worker())),
    );
    lab.settle();
    assert_eq!(spec_of(&lab, cp), None, "not bootstrapped");
    assert_eq!(
        ready(&lab, cp),
        Err("etcd is Preparing: waiting for bootstrap or a running member to join".into())
    );

    lab.on(cp, |w, at, _| calls::bootstrap(w, at)).unwrap();
    lab.tick(MOMENT);
    let spec = spec_of(&lab, cp).expect("serves after bootstrap");
    assert_eq!(spec.node, lab.at(cp));
    assert_eq!(
        spec.ips,
        vec![Ipv4Addr::new(10, 0, 128, 11)],
        "the private IP, which is the endpoint's too"
    );
    assert!(spec.dns_names.contains(&"cp-1".to_string()));
    assert!(
        spec.dns_names
            .contains(&"kubernetes.default.svc".to_string())
    );
    assert_eq!(spec.ca, sample.kubernetes_ca);
    assert_eq!(ready(&lab, cp), Ok(()));
    assert_eq!(spec_of(&lab, w), None, "workers run no API server");
    assert_eq!(ready(&lab, w), Err("the node is no control plane".into()));
}

#[test]
fn faults_take_it_down_or_hide_it() {
    let mut lab = Lab::new();
    let ids = control_planes(&mut lab, 1);
    let cp = ids[0];
    lab.world
        .config
        .talos_faults
        .push(TalosFault::ApiserverDown {
            server: Some(ServerRef::Name("cp-1".into())),
        });
    assert_eq!(ready(&lab, cp), Err("injected".into()));
    assert!(spec_of(&lab, cp).is_some(), "still listening");

    lab.world.config.talos_faults = vec![TalosFault::Unreachable {
        server: Some(ServerRef::Id(cp)),
    }];
    assert_eq!(spec_of(&lab, cp), None, "unreachable like apid");
    lab.world.config.talos_faults.clear();
    assert_eq!(ready(&lab, cp), Ok(()));
}

#[test]
fn readiness_needs_a_quorum_of_etcd_members() {
    let mut lab = Lab::new();
    let ids = control_planes(&mut lab, 3);
    for id in &ids {
        assert!(lab.talos(*id).node.summary.etcd_member);
        assert_eq!(ready(&lab, *id), Ok(()));
    }
    lab.world.power(ids[2], Power::Off, lab.now).unwrap();
    lab.hetzner();
    lab.tick(Duration::ZERO);
    assert_eq!(spec_of(&lab, ids[2]), None, "down with its node");
    assert_eq!(ready(&lab, ids[0]), Ok(()), "2 of 3 is a quorum");

    lab.world.power(ids[1], Power::Off, lab.now).unwrap();
    lab.hetzner();
    lab.tick(Duration::ZERO);
    assert!(spec_of(&lab, ids[0]).is_some(), "its own etcd still runs");
    assert_eq!(
        ready(&lab, ids[0]),
        Err("etcd has no quorum: 1 of 3 members are up".into())
    );

    lab.world.power(ids[1], Power::On, lab.now).unwrap();
    lab.hetzner();
    lab.settle();
    assert_eq!(ready(&lab, ids[0]), Ok(()));
    assert_eq!(ready(&lab, ids[1]), Ok(()));
}

#[test]
fn reboots_and_resets_take_it_away() {
    let mut lab = Lab::new();
    let ids = control_planes(&mut lab, 3);
    let before = lab.at(ids[1]);
    lab.on(ids[1], calls::reboot).unwrap();
    assert_eq!(spec_of(&lab, ids[1]), None, "rebooting");
    assert_eq!(
        readiness(&lab.world, before),
        Err("the node is restarting".into())
    );
    lab.settle();
    let after = spec_of(&lab, ids[1]).expect("back after the reboot");
    assert_ne!(after.node, before, "a new server for the new start");

    lab.on(ids[1], |w, at, now| calls::reset(w, at, false, true, now))
        .unwrap();
    lab.tick(Duration::ZERO);
    assert_eq!(spec_of(&lab, ids[1]), None, "wiped and rebooting");
    let cluster = lab.world.servers[&ids[0]]
        .talos
        .as_ref()
        .and_then(|t| t.node.config())
        .map(|c| c.cluster.clone())
        .unwrap();
    let ring = lab.world.servers[&ids[0]]
        .talos
        .as_ref()
        .and_then(|t| t.node.disk.etcd.member.as_ref())
        .map(|m| m.ring)
        .unwrap();
    let members = crate::talos::etcd::members(&lab.world, &cluster, ring);
    assert_eq!(
        members.len(),
        3,
        "the member reset without leaving is still listed"
    );
    assert_eq!(ready(&lab, ids[0]), Ok(()), "2 of 3 members are up");
    // It comes back from its user data and joins etcd as a new member,
    // its old one removed as it joins (same hostname).
    lab.settle();
    assert!(spec_of(&lab, ids[1]).is_some());
    let members = crate::talos::etcd::members(&lab.world, &cluster, ring);
    assert_eq!(members.len(), 3, "{members:?}");
    assert!(members.iter().all(|m| m.up), "{members:?}");
    assert_eq!(ready(&lab, ids[1]), Ok(()));
}

#[test]
fn endpoint_hosts() {
    assert_eq!(
        endpoint_host("https://10.0.128.17:6443"),
        Some("10.0.128.17")
    );
    assert_eq!(
        endpoint_host("https://api.example.com/x"),
        Some("api.example.com")
    );
    assert_eq!(endpoint_host("https://[fd00::1]:6443"), Some("fd00::1"));
    assert_eq!(endpoint_host("http://10.0.0.1"), None);
    assert_eq!(endpoint_host("https://:6443"), None);
}

fn head(text: &str) -> Head {
    Head::Complete(text.as_bytes().to_vec())
}

fn served() -> Served {
    Served {
        version: KubernetesVersion::parse("v1.34.1")
            .unwrap()
            .info(Architecture::X86),
    }
}

fn admin() -> Caller {
    Caller::Verified {
        roles: vec!["system:masters".into()],
    }
}

fn get(path: &str) -> Head {
    head(&format!(
        "GET {path} HTTP/1.1\r\nHost: 10.0.128.11:6443\r\nConnection: close\r\n\r\n"
    ))
}

#[test]
fn answers_health_checks_like_kube_apiserver() {
    let healthy = || Ok(());
    let unhealthy = || Err("injected".to_string());
    assert_eq!(
        answer(&get("/readyz"), &admin(), &served(), healthy),
        Reply::text(200, "ok")
    );
    assert_eq!(
        answer(&get("/livez"), &admin(), &served(), unhealthy).status,
        200
    );
    let failed = answer(&get("/readyz"), &admin(), &served(), unhealthy);
    assert_eq!(failed.status, 500);
    assert!(
        failed.body.contains("\n[-]etcd failed: injected\n"),
        "{failed:?}"
    );
    assert!(failed.body.ends_with("readyz check failed\n"));
    assert_eq!(
        answer(&get("/healthz"), &admin(), &served(), unhealthy).status,
        500
    );
    let verbose = answer(&get("/readyz?verbose"), &admin(), &served(), healthy);
    assert_eq!(
        verbose.body,
        "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"
    );
    assert_eq!(
        answer(&get("/api/v1/nodes"), &admin(), &served(), healthy).status,
        404
    );
    let post = head("POST /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(answer(&post, &admin(), &served(), healthy).status, 405);
}

#[test]
fn refuses_strangers_and_malformed_requests() {
    let never = || -> Result<(), String> { panic!("no health check for this request") };
    for caller in [
        Caller::Untrusted {
            reason: "no client certificate".into(),
        },
        Caller::Anonymous,
    ] {
        let refused = answer(&get("/readyz"), &caller, &served(), never);
        assert_eq!(refused.status, 401);
        assert_eq!(refused.content_type, "application/json");
        let status: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
        assert_eq!(status["reason"], "Unauthorized");
    }
    let no_host = head("GET /readyz HTTP/1.1\r\n\r\n");
    assert_eq!(answer(&no_host, &admin(), &served(), never).status, 400);
    let old = head("GET /readyz HTTP/1.0\r\n\r\n");
    assert_eq!(answer(&old, &admin(), &served(), || Ok(())).status, 200);
    let h2 = head("GET /readyz HTTP/2.0\r\nHost: x\r\n\r\n");
    assert_eq!(answer(&h2, &admin(), &served(), never).status, 505);
    let garbage = head("hello\r\n\r\n");
    assert_eq!(answer(&garbage, &admin(), &served(), never).status, 400);
    assert_eq!(
        answer(&Head::TooLarge, &admin(), &served(), never).status,
        431
    );
}

#[tokio::test]
async fn reads_one_request_head() {
    let (mut client, mut server) = tokio::io::duplex(64);
    let writer = tokio::spawn(async move {
        client
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\nrest")
            .await
            .unwrap();
    });
    let read = read_head(&mut server).await.unwrap();
    assert_eq!(read, Some(head("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")));
    writer.await.unwrap();

    let (client, mut server) = tokio::io::duplex(64);
    drop(client);
    assert_eq!(read_head(&mut server).await.unwrap(), None);

    let (mut client, mut server) = tokio::io::duplex(64 * 1024);
    client.write_all(&[b'a'; MAX_HEAD + 10]).await.unwrap();
    assert_eq!(read_head(&mut server).await.unwrap(), Some(Head::TooLarge));
}

#[test]
fn answers_version_like_kube_apiserver() {
    let never = || -> Result<(), String> { panic!("no health check for /version") };
    let reply = answer(&get("/version"), &admin(), &served(), never);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, "application/json");
    let info: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        info,
        json!({
            "major": "1",
            "minor": "34",
            "emulationMajor": "1",
            "emulationMinor": "34",
            "minCompatibilityMajor": "1",
            "minCompatibilityMinor": "33",
            "gitVersion": "v1.34.1",
            "gitCommit": "93248f9ae092f571eb870b7664c534bfc7d00f03",
            "gitTreeState": "clean",
            "buildDate": "2025-09-09T19:37:20Z",
            "goVersion": "go1.24.6",
            "compiler": "gc",
            "platform": "linux/amd64",
        })
    );
    assert!(
        reply
            .body
            .starts_with("{\n  \"major\": \"1\",\n  \"minor\": \"34\","),
        "indented, in kube-apiserver's order: {}",
        reply.body
    );
    let post = head("POST /version HTTP/1.1\r\nHost: x\r\n\r\n");
    let refused = answer(&post, &admin(), &served(), never);
    assert_eq!(refused.status, 405);
    let status: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(status["reason"], "MethodNotAllowed");
    let stranger = answer(&get("/version"), &Caller::Anonymous, &served(), never);
    assert_eq!(stranger.status, 401);
}

#[test]
fn unknown_paths_get_a_not_found_status() {
    let never = || -> Result<(), String> { panic!("no health check for this path") };
    for path in ["/api/v1/nodes", "/nonexistent", "/version/x"] {
        let reply = answer(&get(path), &admin(), &served(), never);
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(
            reply.body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
             \"message\":\"the server could not find the requested resource\",\
             \"reason\":\"NotFound\",\"details\":{},\"code\":404}\n"
        );
    }
    let refused = answer(&get("/readyz"), &Caller::Anonymous, &served(), never);
    assert_eq!(
        refused.body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"
    );
}

#[test]
fn versions_come_from_the_config_or_the_talos_default() {
    let v1_11 = "v1.11.3".parse().unwrap();
    let v1_12 = "v1.12.6".parse().unwrap();
    assert_eq!(
        KubernetesVersion::of(Some("v1.33.5"), &v1_12).git_version,
        "v1.33.5"
    );
    assert_eq!(KubernetesVersion::of(None, &v1_11).git_version, "v1.34.1");
    assert_eq!(KubernetesVersion::of(None, &v1_12).git_version, "v1.35.2");
    assert_eq!(
        KubernetesVersion::of(Some("latest"), &v1_12).git_version,
        "v1.35.2",
        "a tag that is no release leaves the default"
    );
    let pre = KubernetesVersion::parse("v1.36.0-rc.1").unwrap();
    assert_eq!((pre.major, pre.minor), (1, 36));
    assert_eq!(KubernetesVersion::parse("1.35.2"), None);
    assert_eq!(KubernetesVersion::parse("v1.35"), None);

    let unknown = KubernetesVersion::parse("v1.32.9")
        .unwrap()
        .info(Architecture::Arm);
    assert_eq!(unknown["platform"], "linux/arm64");
    assert_eq!(unknown["minor"], "32");
    assert_eq!(unknown["goVersion"], "go1.23.12");
    assert!(
        unknown.get("emulationMajor").is_none(),
        "compatibility versions arrived in 1.33"
    );
}

#[test]
fn the_spec_carries_the_configured_kubernetes_release() {
    let mut lab = Lab::new();
    let mut node = control_plane();
    node.kubernetes = Some("v1.34.1".into());
    let config = cluster().machine_config(&node);
    let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
    lab.settle();
    lab.on(cp, |w, at, _| calls::bootstrap(w, at)).unwrap();
    lab.tick(MOMENT);
    let spec = spec_of(&lab, cp).expect("serves after bootstrap");
    assert_eq!(spec.kubernetes.git_version, "v1.34.1");
    assert_eq!(spec.arch, Architecture::X86);
}

#[test]
fn v1_14_control_planes_serve_tls_1_3_only() {
    let mut lab = Lab::new();
    lab.release("v1.14.0");
    let sample = cluster();
    let mut node = control_plane();
    node.talos = "v1.14.0".into();
    node.kubernetes = Some("v1.37.2".into());
    let config = sample.machine_config(&node);
    assert!(config.contains("kind: KubeAPIServerCAConfig"), "{config}");
    let cp = lab.server("cp-1", "10.0.128.11", "v1.14.0", Some(config));
    lab.settle();
    assert!(
        lab.talos(cp).node.config().is_some(),
        "configured from user data"
    );
    lab.on(cp, |w, at, _| calls::bootstrap(w, at)).unwrap();
    lab.tick(MOMENT);
    let spec = spec_of(&lab, cp).expect("serves after bootstrap");
    assert!(spec.tls13_only);
    assert_eq!(
        spec.ca, sample.kubernetes_ca,
        "the CA of KubeAPIServerCAConfig"
    );
    assert_eq!(spec.kubernetes.git_version, "v1.37.2");
    assert_eq!(ready(&lab, cp), Ok(()));

    let mut older = Lab::new();
    let ids = control_planes(&mut older, 1);
    assert!(
        !spec_of(&older, ids[0]).unwrap().tls13_only,
        "v1.12 takes TLS 1.2"
    );
}

#[test]
fn talos_lines_know_their_kubernetes_releases() {
    let talos = |v: &str| -> TalosVersion { v.parse().unwrap() };
    let k8s = |v: &str| KubernetesVersion::parse(v).unwrap();
    let v1_14 = talos("v1.14.0");
    assert_eq!(
        KubernetesVersion::talos_default(&v1_14).git_version,
        "v1.37.0"
    );
    assert_eq!(
        KubernetesVersion::talos_default(&talos("v1.13.9")).git_version,
        "v1.35.2",
        "unchanged"
    );
    assert_eq!(KubernetesVersion::supported_minors(&v1_14), Some((32, 37)));
    assert_eq!(KubernetesVersion::supported_minors(&talos("v1.15.0")), None);
    assert_eq!(k8s("v1.37.2").supported_with(&v1_14), Ok(()));
    assert_eq!(k8s("v1.32.0").supported_with(&v1_14), Ok(()));
    assert_eq!(
        k8s("v1.31.9").supported_with(&talos("v1.14.0-rc.1")),
        Err("version of Kubernetes 1.31.9 is too old to be used with Talos 1.14.0-rc.1".into())
    );
    assert_eq!(
        k8s("v1.38.0-alpha.1").supported_with(&v1_14),
        Err("version of Kubernetes 1.38.0-alpha.1 is too new to be used with Talos 1.14.0".into())
    );
    assert_eq!(k8s("v1.36.4").supported_with(&talos("v1.13.9")), Ok(()));
    assert!(k8s("v1.37.0").supported_with(&talos("v1.13.9")).is_err());
}
