//! Tests of the API load balancer's steps without a Hetzner API.

use super::*;

#[test]
fn a_config_names_the_endpoint_only_in_its_control_plane_endpoint() {
    let on = "version: v1alpha1\ncluster:\n  controlPlane:\n    endpoint: https://10.0.128.254:6443\n  apiServer:\n    certSANs: [10.0.128.254]\n";
    let off = "version: v1alpha1\ncluster:\n  controlPlane:\n    endpoint: https://10.0.128.17:6443\n  apiServer:\n    certSANs: [10.0.128.254]\n";
    assert!(names_endpoint(on, "https://10.0.128.254:"));
    assert!(!names_endpoint(off, "https://10.0.128.254:"));
    assert!(names_endpoint("a: [", "https://10.0.128.254:"));
}

#[test]
fn names_labels_and_selectors() {
    assert_eq!(load_balancer_name("noreturn"), "noreturn-api");
    let labels = load_balancer_labels("noreturn");
    assert_eq!(labels["role"], "api-endpoint");
    assert_eq!(labels["cluster"], "noreturn");
    assert_eq!(
        control_plane_selector("noreturn").to_string(),
        "managed-by=hct,cluster=noreturn,pool=cp"
    );
    assert_eq!(PORTS, [6443, 50000, 50001]);
}

/// The load balancer `ensure` leaves: on network 7 at 10.0.128.254,
/// public interface off, the control planes its target, every port served.
fn whole() -> LoadBalancer {
    serde_json::from_value(serde_json::json!({
        "id": 1,
        "name": "noreturn-api",
        "public_net": {"enabled": false},
        "private_net": [{"network": 7, "ip": "10.0.128.254"}],
        "services": PORTS.map(|p| serde_json::json!({"protocol": "tcp", "listen_port": p, "destination_port": p})),
        "targets": [{
            "type": "label_selector",
            "label_selector": {"selector": "managed-by=hct,cluster=noreturn,pool=cp"},
            "use_private_ip": true,
        }],
    }))
    .unwrap()
}

#[test]
fn gaps_name_each_step_a_load_balancer_lacks() {
    let ip: Ipv4Addr = "10.0.128.254".parse().unwrap();
    let gaps_of = |lb: &LoadBalancer| gaps(lb, "noreturn", 7, ip);
    assert!(gaps_of(&whole()).is_empty());

    let mut lb = whole();
    lb.private_net[0].ip = "10.0.128.253".into();
    assert_eq!(
        gaps_of(&lb),
        [Gap::OtherIp("10.0.128.253".parse().unwrap())]
    );
    lb.private_net[0].network = 8;
    assert_eq!(gaps_of(&lb), [Gap::OtherNetwork]);
    lb.private_net.clear();
    assert_eq!(gaps_of(&lb), [Gap::NotAttached]);

    let mut lb = whole();
    lb.public_net.enabled = true;
    lb.services.retain(|s| s.listen_port != 50000);
    lb.targets[0].use_private_ip = false;
    let lacking = gaps_of(&lb);
    assert_eq!(
        lacking,
        [Gap::PublicInterfaceOn, Gap::NoTarget, Gap::NoService(50000)]
    );
    let said: Vec<String> = lacking.iter().map(Gap::to_string).collect();
    assert_eq!(
        said,
        [
            "public interface on",
            "no control-plane target",
            "no service on port 50000"
        ]
    );
    // Another cluster's target is not this one's.
    assert_eq!(gaps(&whole(), "other", 7, ip), [Gap::NoTarget]);
}
