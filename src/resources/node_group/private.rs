//! What a group keeps in Terraform's private state, out of sight: whether
//! its cluster's etcd was bootstrapped (`cluster::bootstrap`), as JSON
//! (`{"etcd_bootstrapped": true}`). Terraform keeps it with the resource
//! from plan to apply and across applies; an import or a state written
//! before hct kept it has none.

use serde_json::{Map, Value};

use crate::cluster::NodeRecord;
use crate::cluster::bootstrap::EtcdRecord;

const ETCD_BOOTSTRAPPED: &str = "etcd_bootstrapped";

/// What state knows of etcd. Without a record (imported, or written before
/// hct kept one), a group that has nodes in state counts as bootstrapped:
/// hct never guesses towards a second Bootstrap.
pub fn etcd_record(private: &[u8], prior_nodes: &[NodeRecord]) -> EtcdRecord {
    match fields(private)
        .get(ETCD_BOOTSTRAPPED)
        .and_then(Value::as_bool)
    {
        Some(true) => EtcdRecord::Bootstrapped,
        Some(false) => EtcdRecord::NotYet,
        None if prior_nodes.is_empty() => EtcdRecord::NotYet,
        None => EtcdRecord::Bootstrapped,
    }
}

/// `private` with the etcd record set.
pub fn with_etcd_record(private: &[u8], record: EtcdRecord) -> Vec<u8> {
    let mut fields = fields(private);
    fields.insert(
        ETCD_BOOTSTRAPPED.into(),
        Value::Bool(record == EtcdRecord::Bootstrapped),
    );
    serde_json::to_vec(&fields).unwrap_or_default()
}

fn fields(private: &[u8]) -> Map<String, Value> {
    serde_json::from_slice(private).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> NodeRecord {
        NodeRecord {
            name: "c-cp-1".into(),
            server_id: 1,
            ip: "10.0.128.17".parse().unwrap(),
            config_sha256: None,
        }
    }

    #[test]
    fn the_record_round_trips_and_its_absence_never_invites_a_bootstrap() {
        let none: &[u8] = &[];
        assert_eq!(etcd_record(none, &[]), EtcdRecord::NotYet);
        assert_eq!(etcd_record(none, &[node()]), EtcdRecord::Bootstrapped);
        let not_yet = with_etcd_record(none, EtcdRecord::NotYet);
        assert_eq!(etcd_record(&not_yet, &[node()]), EtcdRecord::NotYet);
        let done = with_etcd_record(&not_yet, EtcdRecord::Bootstrapped);
        assert_eq!(etcd_record(&done, &[]), EtcdRecord::Bootstrapped);
        assert_eq!(
            serde_json::from_slice::<Value>(&done).unwrap(),
            serde_json::json!({"etcd_bootstrapped": true})
        );
    }
}
