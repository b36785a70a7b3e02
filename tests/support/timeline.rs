//! The sim's own timeline of its Talos nodes, for tests that check how
//! many nodes were out of service at once (upgrades, reboots, resizes).

use std::collections::{BTreeMap, BTreeSet};

use hct_sim::{SimEvent, SimHandle};

/// How often Talos started on each node so far, by server name.
pub fn talos_starts(sim: &SimHandle) -> BTreeMap<String, u64> {
    sim.inspect(|w| {
        w.servers
            .values()
            .filter_map(|s| Some((s.name.clone(), s.talos.as_ref()?.node.summary.starts)))
            .collect()
    })
}

/// The sim's Talos-node events received so far: (name, healthy, starts).
pub fn talos_timeline(
    events: &mut tokio::sync::broadcast::Receiver<SimEvent>,
) -> Vec<(String, bool, u64)> {
    let mut timeline = Vec::new();
    loop {
        match events.try_recv() {
            Ok(SimEvent::TalosNode {
                name,
                healthy,
                starts,
                ..
            }) => timeline.push((name, healthy, starts)),
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => return timeline,
            Err(e) => panic!("the sim's timeline: {e}"),
        }
    }
}

/// From a timeline that starts with every node in service: the most nodes
/// of `group` out of service at once (not healthy, or started again and
/// not yet healthy), and the nodes that started again.
pub fn out_of_service_at_once(
    starts_before: &BTreeMap<String, u64>,
    timeline: &[(String, bool, u64)],
    group: &str,
) -> (usize, BTreeSet<String>) {
    let mut starts: BTreeMap<&str, u64> = starts_before
        .iter()
        .map(|(name, count)| (name.as_str(), *count))
        .collect();
    let mut down: BTreeSet<&str> = BTreeSet::new();
    let mut restarted = BTreeSet::new();
    let mut most = 0;
    for (name, healthy, count) in timeline.iter().filter(|(n, ..)| n.contains(group)) {
        let again = starts
            .insert(name, *count)
            .is_some_and(|before| before < *count);
        if again {
            restarted.insert(name.clone());
        }
        if *healthy {
            // A restart seen only once it was over still took the node down.
            most = most.max(down.len() + usize::from(again && !down.contains(name.as_str())));
            down.remove(name.as_str());
        } else {
            down.insert(name);
            most = most.max(down.len());
        }
    }
    (most, restarted)
}
