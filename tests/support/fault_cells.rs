//! The fault matrix's table (tests/e2e/fault_matrix.rs): the steps of a
//! cluster apply, the fault classes, and for each cell the fault it injects
//! and what hct must do about it.

use hct_sim::SimHandle;

/// Requests of a "storm": 429s, or `locked`, in a row on one route.
const STORM: u32 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    ImageLookup,
    PlacementGroups,
    ServerCreate,
    Attach,
    PowerOn,
    ConfigDelivery,
    Bootstrap,
    HealthWait,
    PoolJoin,
    ScaleDownReset,
    Delete,
}

pub const STEPS: [Step; 11] = [
    Step::ImageLookup,
    Step::PlacementGroups,
    Step::ServerCreate,
    Step::Attach,
    Step::PowerOn,
    Step::ConfigDelivery,
    Step::Bootstrap,
    Step::HealthWait,
    Step::PoolJoin,
    Step::ScaleDownReset,
    Step::Delete,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    RateLimitStorm,
    ServerErrors,
    Locked,
    FailedAction,
    Unreachable,
    Killed,
    /// The request is carried out and its answer lost (a 504 from a proxy
    /// that gave up): the retry meets what the first attempt did.
    AnswerLost,
}

pub const FAULTS: [Fault; 7] = [
    Fault::RateLimitStorm,
    Fault::ServerErrors,
    Fault::Locked,
    Fault::FailedAction,
    Fault::Unreachable,
    Fault::Killed,
    Fault::AnswerLost,
];

/// What a cell's operation is: the apply that builds the cluster, the
/// apply that scales the pool from 2 nodes to 1, or the destroy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    ScaleDown,
    Destroy,
}

/// When a SIGKILL cell kills the provider: as soon as the sim shows this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The sim saw a request on the route (`POST /servers`).
    Request(&'static str),
    /// The server's Talos node got its machine config.
    Configured(&'static str),
    /// Bootstrap was called on the server's node.
    Bootstrapped(&'static str),
    /// The server's node runs an etcd member.
    EtcdMember(&'static str),
    /// The server is running.
    Running(&'static str),
    /// The server's node was reset (its config wiped) or the server is gone.
    Reset(&'static str),
}

impl Trigger {
    pub fn reached(self, sim: &SimHandle) -> bool {
        let node = |name: &str, test: &dyn Fn(&hct_sim::TalosNode) -> bool| {
            sim.inspect(|w| {
                w.servers
                    .values()
                    .find(|s| s.name == name)
                    .and_then(|s| s.talos.as_ref())
                    .is_some_and(test)
            })
        };
        match self {
            Self::Request(route) => sim.request_counts().get(route).copied().unwrap_or(0) > 0,
            Self::Configured(name) => node(name, &|t| t.node.disk.config.is_some()),
            Self::Bootstrapped(name) => node(name, &|t| t.node.disk.etcd.founder),
            Self::EtcdMember(name) => node(name, &|t| t.node.disk.etcd.member.is_some()),
            Self::Running(name) => sim.inspect(|w| {
                w.servers.values().any(|s| {
                    s.name == name && s.status == hct_sim::resources::servers::ServerStatus::Running
                })
            }),
            Self::Reset(name) => {
                let gone = sim.inspect(|w| !w.servers.values().any(|s| s.name == name));
                gone || node(name, &|t| t.node.disk.config.is_none())
            }
        }
    }
}

/// What a cell injects and what hct must do.
#[derive(Clone, Debug)]
pub enum Expect {
    /// The cell makes no sense; one word says why.
    NotApplicable(&'static str),
    /// The operation succeeds through retries; every counted fault is used up.
    RidesOut { faults: Vec<String> },
    /// The operation fails with a diagnostic that contains each of `names`;
    /// `faults` are injected once the sim shows `from` (None: before the
    /// operation starts).
    Fails {
        faults: Vec<String>,
        names: Vec<&'static str>,
        from: Option<Trigger>,
    },
    /// The provider is SIGKILLed when the sim shows `when`; `stall` (faults)
    /// holds the operation at the step until then.
    Killed { stall: Vec<String>, when: Trigger },
}

#[derive(Clone, Debug)]
pub struct Cell {
    pub step: Step,
    pub fault: Fault,
    pub expect: Expect,
}

impl Cell {
    pub fn label(&self) -> String {
        format!("{}/{}", self.step.label(), self.fault.label())
    }

    pub fn applicable(&self) -> bool {
        !matches!(self.expect, Expect::NotApplicable(_))
    }

    /// A guess at how long the cell takes, to start the long ones first.
    pub fn weight(&self) -> u32 {
        let setup = match self.step.operation() {
            Operation::Create => 0,
            _ => 2,
        };
        let wait = match (&self.expect, self.fault) {
            (Expect::Fails { .. }, Fault::ServerErrors) => 3,
            (Expect::Fails { .. }, _) | (Expect::RidesOut { .. }, Fault::RateLimitStorm) => 1,
            _ => 0,
        };
        setup + wait
    }
}

impl Step {
    pub fn label(self) -> &'static str {
        match self {
            Self::ImageLookup => "image lookup",
            Self::PlacementGroups => "placement groups",
            Self::ServerCreate => "server create",
            Self::Attach => "attach to network",
            Self::PowerOn => "power on",
            Self::ConfigDelivery => "config delivery",
            Self::Bootstrap => "bootstrap",
            Self::HealthWait => "health wait",
            Self::PoolJoin => "pool join",
            Self::ScaleDownReset => "scale-down reset",
            Self::Delete => "delete (destroy)",
        }
    }

    pub fn operation(self) -> Operation {
        match self {
            Self::ScaleDownReset => Operation::ScaleDown,
            Self::Delete => Operation::Destroy,
            _ => Operation::Create,
        }
    }

    /// The step's Hetzner request, as the sim's request log names its route.
    fn route(self) -> Option<&'static str> {
        Some(match self {
            Self::ImageLookup => "GET /images",
            Self::PlacementGroups => "POST /placement_groups",
            Self::ServerCreate => "POST /servers",
            Self::Attach => "POST /servers/{id}/actions/attach_to_network",
            Self::PowerOn => "POST /servers/{id}/actions/poweron",
            Self::ScaleDownReset | Self::Delete => "DELETE /servers/{id}",
            _ => return None,
        })
    }

    /// The Hetzner action the step starts.
    fn action(self) -> Option<&'static str> {
        Some(match self {
            Self::ServerCreate => "create_server",
            Self::Attach => "attach_to_network",
            Self::PowerOn => "start_server",
            Self::ScaleDownReset | Self::Delete => "delete_server",
            _ => return None,
        })
    }

    /// What a diagnostic of the step must say: the step, and the node (or
    /// the placement group) it was at.
    fn names(self) -> Vec<&'static str> {
        match self {
            Self::ImageLookup => vec!["looking up existing Talos snapshots"],
            Self::PlacementGroups => vec!["creating placement group fm-cp-spread-1"],
            Self::ServerCreate => vec!["creating server fm-cp-1"],
            Self::Attach => vec!["fm-cp-1", "attaching to the network"],
            Self::PowerOn => vec!["fm-cp-1", "powering on"],
            Self::ConfigDelivery => vec!["fm-cp-1", "applying the machine config"],
            Self::Bootstrap => vec!["fm-cp-1", "bootstrapping etcd"],
            Self::HealthWait => vec!["fm-cp-1", "waiting for etcd and kubelet"],
            Self::PoolJoin => vec!["fm-general-1", "applying the machine config"],
            Self::ScaleDownReset => vec!["deleting server fm-general-2"],
            Self::Delete => vec!["deleting server fm-general-1"],
        }
    }

    /// The node the step's Talos faults hit.
    fn node(self) -> &'static str {
        match self {
            Self::PoolJoin => "fm-general-1",
            Self::ScaleDownReset => "fm-general-2",
            _ => "fm-cp-1",
        }
    }

    fn kill_at(self) -> (Vec<String>, Trigger) {
        let stall = |fault: String| vec![fault];
        match self {
            Self::ConfigDelivery => (vec![], Trigger::Configured("fm-cp-1")),
            Self::Bootstrap => (vec![], Trigger::Bootstrapped("fm-cp-1")),
            // The API server never gets ready: the wait is still on when
            // etcd runs.
            Self::HealthWait => (
                stall(talos("apiserver_down", "fm-cp-1", "")),
                Trigger::EtcdMember("fm-cp-1"),
            ),
            // The new worker never answers: its config is still to be
            // delivered when it runs.
            Self::PoolJoin => (
                stall(talos("unreachable", "fm-general-1", "")),
                Trigger::Running("fm-general-1"),
            ),
            Self::ScaleDownReset => (vec![], Trigger::Reset("fm-general-2")),
            other => (
                vec![],
                Trigger::Request(other.route().expect("a Hetzner step")),
            ),
        }
    }
}

impl Fault {
    pub fn label(self) -> &'static str {
        match self {
            Self::RateLimitStorm => "429 storm",
            Self::ServerErrors => "5xx",
            Self::Locked => "locked",
            Self::FailedAction => "failed action",
            Self::Unreachable => "unreachable",
            Self::Killed => "SIGKILL",
            Self::AnswerLost => "answer lost",
        }
    }
}

fn route_fault(route: &str, respond: &str, count: Option<u32>) -> String {
    let count = count.map_or(String::new(), |n| format!(r#", "count": {n}"#));
    format!(r#"{{"route": "{route}", "respond": {respond}{count}}}"#)
}

/// A Talos fault on one server; `extra` adds fields (`, "call": "…"`).
fn talos(kind: &str, server: &str, extra: &str) -> String {
    format!(r#"{{"talos": "{kind}", "server": "{server}"{extra}}}"#)
}

fn cell(step: Step, fault: Fault) -> Expect {
    use Fault::*;
    use Step::*;
    let talos_step = matches!(step, ConfigDelivery | Bootstrap | HealthWait | PoolJoin);
    match (step, fault) {
        (_, RateLimitStorm | ServerErrors | Locked | FailedAction | AnswerLost) if talos_step => {
            Expect::NotApplicable("Talos-only")
        }
        (ImageLookup, Locked | FailedAction | AnswerLost) => Expect::NotApplicable("read-only"),
        (PlacementGroups | ServerCreate, Locked) => Expect::NotApplicable("nothing-to-lock"),
        (PlacementGroups, FailedAction) => Expect::NotApplicable("actionless"),
        (ImageLookup | PlacementGroups, Unreachable) => Expect::NotApplicable("nodeless"),
        (ServerCreate | Attach | PowerOn, Unreachable) => Expect::NotApplicable("not-booted"),
        (Delete, Unreachable) => Expect::NotApplicable("Talos-free"),
        (_, RateLimitStorm) => Expect::RidesOut {
            faults: vec![route_fault(step.route().unwrap(), "429", Some(STORM))],
        },
        (_, AnswerLost) => Expect::RidesOut {
            faults: vec![format!(
                r#"{{"route": "{}", "respond": "timeout", "count": 1, "after_handling": true}}"#,
                step.route().unwrap()
            )],
        },
        (_, Locked) => Expect::RidesOut {
            faults: vec![route_fault(
                step.route().unwrap(),
                r#""locked""#,
                Some(STORM),
            )],
        },
        (_, ServerErrors) => Expect::Fails {
            faults: vec![route_fault(step.route().unwrap(), "503", None)],
            names: [step.names(), vec!["injected by hct-sim"]].concat(),
            from: None,
        },
        (_, FailedAction) => Expect::Fails {
            faults: vec![format!(r#"{{"action": "{}"}}"#, step.action().unwrap())],
            names: [step.names(), vec!["injected by hct-sim"]].concat(),
            from: None,
        },
        // A node that is gone when it is to leave is deleted anyway.
        (ScaleDownReset, Unreachable) => Expect::RidesOut {
            faults: vec![talos("unreachable", step.node(), "")],
        },
        (ConfigDelivery | PoolJoin, Unreachable) => Expect::Fails {
            faults: vec![talos("unreachable", step.node(), "")],
            names: step.names(),
            from: None,
        },
        // Cut off the moment the call comes (the node answered before).
        (Bootstrap, Unreachable) => Expect::Fails {
            faults: vec![talos("call_fails", step.node(), r#", "call": "Bootstrap""#)],
            names: step.names(),
            from: None,
        },
        // From Bootstrap on: before it, hct's look for an existing etcd
        // asks ServiceList too, whenever its own deadline ends a held
        // EtcdMemberList before Talos' does (a race a loaded machine may
        // lose), and the diagnostic would name that step.
        (HealthWait, Unreachable) => Expect::Fails {
            faults: vec![talos(
                "call_fails",
                step.node(),
                r#", "call": "ServiceList""#,
            )],
            names: step.names(),
            from: Some(Trigger::Bootstrapped("fm-cp-1")),
        },
        (_, Killed) => {
            let (stall, when) = step.kill_at();
            Expect::Killed { stall, when }
        }
    }
}

/// Every cell, row by row.
pub fn matrix() -> Vec<Cell> {
    STEPS
        .iter()
        .flat_map(|step| {
            FAULTS.iter().map(|fault| Cell {
                step: *step,
                fault: *fault,
                expect: cell(*step, *fault),
            })
        })
        .collect()
}
