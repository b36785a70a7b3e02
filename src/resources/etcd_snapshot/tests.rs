use super::*;
use crate::talos::Secrets;
use crate::talos::client_config::talosconfig;
use crate::talos::testing::reference_plan;

const RECIPIENT: &str = "age1sxfzqgu7k66rpk87eccfvmg2dx8dzd774y8wk64rsahxteudn4zqr8vpz8";

fn config(talosconfig: &str, backup: Value) -> Value {
    Value::object([
        (TALOSCONFIG, Value::from(talosconfig)),
        (snapshot_destination::ATTRIBUTE, backup),
        (TIMEOUT, Value::Null),
    ])
}

fn directory() -> Value {
    Value::object([
        ("local_directory", Value::from("snapshots")),
        ("bucket", Value::Null),
        ("age_recipients", Value::List(vec![Value::from(RECIPIENT)])),
    ])
}

#[test]
fn the_talosconfig_gives_the_cluster_its_control_planes_and_the_admin() {
    let secrets = Secrets::for_checking().unwrap();
    let plan = reference_plan();
    let text = talosconfig("demo", &plan, &secrets).unwrap();
    let input = decode(&config(text.as_str(), directory())).unwrap();
    assert_eq!(input.access.cluster, "demo");
    assert_eq!(input.access.nodes, plan.control_plane().ips);
    assert_eq!(
        input.access.credentials.ca,
        secrets.os_ca().certificate_pem()
    );
    assert_eq!(
        os_ca_fingerprint(&input.access.credentials.ca),
        crate::cluster::settings::secrets_fingerprint(&secrets)
    );
    assert_eq!(input.timeout, DEFAULT_TIMEOUT);
    assert!(matches!(input.destination, Destination::Directory(_)));
    assert!(
        EtcdSnapshotAction
            .validate(&config(text.as_str(), directory()))
            .is_empty()
    );
}

#[test]
fn what_is_wrong_is_named_at_its_attribute() {
    let not_one = EtcdSnapshotAction.validate(&config("kind: Config", directory()));
    assert_eq!(not_one.0.len(), 1, "{not_one:?}");
    assert!(
        not_one
            .0
            .iter()
            .all(|d| d.summary == "Not a talosconfig of hct's")
    );
    let nowhere = Value::object([
        ("local_directory", Value::Null),
        ("bucket", Value::Null),
        ("age_recipients", Value::List(vec![Value::from("age1nope")])),
    ]);
    let secrets = Secrets::for_checking().unwrap();
    let text = talosconfig("demo", &reference_plan(), &secrets).unwrap();
    let mut wrong = config(text.as_str(), nowhere);
    if let Value::Map(items) = &mut wrong {
        items.insert(TIMEOUT.into(), Value::from("soon"));
    }
    let found = EtcdSnapshotAction.validate(&wrong);
    let at = |path: AttrPath| Some(path);
    let backup = AttrPath::attr(snapshot_destination::ATTRIBUTE);
    let seen: Vec<(&str, Option<AttrPath>)> = found
        .0
        .iter()
        .map(|d| (d.summary.as_str(), d.path.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            ("Nowhere for the etcd snapshots", at(backup.clone())),
            (
                "Invalid age recipient",
                at(backup.attr_of("age_recipients").index(0))
            ),
            ("Invalid timeout", at(AttrPath::attr(TIMEOUT))),
        ],
        "{found:?}"
    );
    assert_eq!(not_one.0[0].path, at(AttrPath::attr(TALOSCONFIG)));
    // Unknown values (variables at validation) pass.
    assert!(EtcdSnapshotAction.validate(&config_unknown()).is_empty());
}

fn config_unknown() -> Value {
    Value::object([
        (TALOSCONFIG, Value::Unknown),
        (snapshot_destination::ATTRIBUTE, Value::Unknown),
        (TIMEOUT, Value::Null),
    ])
}
