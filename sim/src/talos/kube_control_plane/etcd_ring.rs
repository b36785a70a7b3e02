//! One ring's real etcd: a member per control plane the emulation lists
//! in the ring (`talos::etcd::members`), each its own etcd process with
//! its own data directory and loopback ports, joined and removed as
//! Talos' etcd service does it:
//!
//! - the ring's first member starts a new etcd cluster (from the snapshot
//!   a recovering founder uploaded, when there is one: `restore`);
//! - a member to be is added through a running member as a learner
//!   (MemberAddAsLearner), then started with the cluster etcd answered, so
//!   etcd itself refuses a join it cannot take (no quorum, a learner
//!   already catching up); once it runs it is promoted to a voter
//!   (MemberPromote), which etcd refuses until it has caught up with the
//!   leader, and which is tried again each pass, as Talos' etcd service
//!   keeps trying. A learner never counts for the quorum, so a join cannot
//!   cost the ring its quorum while the new member catches up;
//! - a member the emulation lists no more is removed through a running
//!   member (itself included, as a node leaving does), then stopped and
//!   its data deleted; etcd refuses that without a healthy quorum too
//!   (as it refuses a node's leave), and it is tried again each pass, the
//!   member running meanwhile;
//! - a member whose node's etcd does not run (node down, etcd failed) is
//!   stopped and keeps its data: it comes back as itself.
//!
//! What etcd refused is reported, not hidden. kube-apiserver reaches the
//! ring through one loopback port (`Front`) that passes each connection to
//! a running voter (a learner serves no writes, linearized reads or
//! watches); EtcdSnapshot reads the
//! node's own member. The members' ports are
//! kept in `etcd/members.json` in the ring's directory, so that members
//! started again after the ring restarts keep the peer URLs etcd knows
//! them by.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::KubeBinaries;
use super::etcd_api::{self, EtcdApiError, Member};
use super::etcd_front::Front;
use super::etcd_member::{MemberFiles, Ports, parse_member_name};
use super::files::Layout;
use super::process::{Component, ProcessError};
use super::restore::{self, RestoreError};
use crate::app::AppState;

#[derive(Debug, thiserror::Error)]
pub enum RingError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("etcd member {member}: {source}")]
    MemberExited {
        member: String,
        source: ProcessError,
    },
    #[error("cannot read etcd's member ports from {path}: {why}")]
    Unreadable { path: PathBuf, why: String },
    #[error(transparent)]
    Restore(#[from] RestoreError),
    #[error("no free loopback port for etcd: {0}")]
    Port(#[from] std::io::Error),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A member the emulation lists in the ring, and whether its node's etcd
/// runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub name: String,
    pub up: bool,
}

/// What a founder restores its data from, if its recovery waits for it.
pub struct Restorer<'a> {
    pub sim: &'a AppState,
    pub binaries: &'a KubeBinaries,
    pub store: &'a str,
}

/// The ring's members as processes.
pub struct EtcdRing {
    binary: PathBuf,
    layout: Layout,
    /// Every member this ring started or added, by name (kept on disk).
    ports: BTreeMap<String, Ports>,
    running: BTreeMap<String, Component>,
    /// The members the emulation listed at the last reconcile.
    listed: BTreeSet<String>,
    /// Running members etcd did not list as voters when last asked (or
    /// started since, joined or from their data): the front passes them
    /// nothing, and they are asked nothing but last.
    learners: BTreeSet<String>,
    front: Front,
}

impl EtcdRing {
    /// The ring of `layout`'s directory, with the members it had.
    pub fn open(binary: &Path, layout: &Layout) -> Result<Self, RingError> {
        let path = layout.path("etcd/members.json");
        let ports: BTreeMap<String, Ports> = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| RingError::Unreadable {
                path: path.clone(),
                why: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                return Err(RingError::Unreadable {
                    path,
                    why: e.to_string(),
                });
            }
        };
        ports.values().for_each(Ports::reserve);
        Ok(Self {
            binary: binary.to_path_buf(),
            layout: layout.clone(),
            ports,
            running: BTreeMap::new(),
            listed: BTreeSet::new(),
            learners: BTreeSet::new(),
            front: Front::bind().map_err(RingError::Port)?,
        })
    }

    /// Where kube-apiserver reaches the ring.
    pub fn front(&self) -> SocketAddr {
        self.front.addr
    }

    /// Err when the process of a member the emulation lists ended on its
    /// own. One that is leaving may: etcd stops a member once its removal
    /// commits, which can come after its MemberRemove call gave up.
    pub fn check(&mut self) -> Result<(), RingError> {
        let mut left = Vec::new();
        for (name, process) in &mut self.running {
            if let Err(source) = process.check() {
                if self.listed.contains(name) {
                    return Err(RingError::MemberExited {
                        member: name.clone(),
                        source,
                    });
                }
                left.push(name.clone());
            }
        }
        for name in left {
            self.running.remove(&name);
        }
        self.aim_front();
        Ok(())
    }

    /// The members whose process runs, by name.
    pub fn running(&self) -> Vec<String> {
        self.running.keys().cloned().collect()
    }

    /// Whether the ring answers through its front (it has a quorum).
    pub async fn healthy(&self) -> bool {
        etcd_api::healthy(self.front.addr).await
    }

    /// The members etcd lists, as a running member answers.
    pub async fn members(&self) -> Result<Vec<Member>, EtcdApiError> {
        etcd_api::list(self.front.addr).await
    }

    /// Brings the processes and etcd's membership in line with `wanted`;
    /// what etcd refused or what has to wait, as problems (tried again at
    /// the next call). Err: a process that cannot start, a restore that
    /// failed.
    pub async fn reconcile(
        &mut self,
        wanted: &[Wanted],
        restorer: Option<&Restorer<'_>>,
    ) -> Result<Vec<String>, RingError> {
        self.listed = wanted.iter().map(|w| w.name.clone()).collect();
        // Promoted first too: etcd takes one learner at a time, so the
        // next join waits for this one.
        let mut problems = self.promote_learners().await;
        let gone: Vec<String> = self
            .ports
            .keys()
            .filter(|name| !wanted.iter().any(|w| w.name == **name))
            .cloned()
            .collect();
        let mut leaving = Vec::new();
        for name in gone {
            if let Err(e) = self.remove(&name).await {
                problems.push(format!("removing member {name}: {e}"));
                leaving.push(name);
            }
        }
        // A member still to be removed keeps running, as a node leaving
        // etcd does until etcd lets it go: stopping it first could take
        // the quorum its removal needs.
        self.running
            .retain(|name, _| wanted.iter().find(|w| w.name == *name).is_none_or(|w| w.up));
        self.aim_front();
        for member in wanted.iter().filter(|w| w.up) {
            if self.running.contains_key(&member.name) {
                continue;
            }
            // Talos removes a member of the node's hostname before the
            // node joins, and joins only once it is gone.
            let joining = !self.ports.contains_key(&member.name);
            if let Some(old) = same_node(&leaving, &member.name).filter(|_| joining) {
                problems.push(format!(
                    "starting member {}: {old} of the same node is still to be removed",
                    member.name
                ));
                continue;
            }
            if let Some(problem) = self.start(&member.name, restorer).await? {
                problems.push(format!("starting member {}: {problem}", member.name));
            }
            self.aim_front();
        }
        problems.extend(self.promote_learners().await);
        Ok(problems)
    }

    /// Promotes each running learner the emulation lists through the
    /// voter that listed it (a learner cannot promote itself); what etcd
    /// refused, as problems.
    async fn promote_learners(&mut self) -> Vec<String> {
        // Every member that starts is taken for a learner until a list
        // says otherwise: with none running, no list is needed.
        let running = &self.running;
        self.learners.retain(|name| running.contains_key(name));
        if self.learners.is_empty() {
            return Vec::new();
        }
        let (addr, members) = match self.list().await {
            Ok(listed) => listed,
            Err(e) => return vec![format!("listing members to promote learners: {e}")],
        };
        let mut problems = Vec::new();
        for member in members.iter().filter(|m| m.is_learner && m.started()) {
            // Down, it cannot catch up; leaving, it would only raise the
            // quorum its removal needs.
            if !self.running.contains_key(&member.name) || !self.listed.contains(&member.name) {
                continue;
            }
            match etcd_api::promote(addr, member.id).await {
                Ok(()) => {
                    self.learners.remove(&member.name);
                }
                Err(e) => problems.push(format!("promoting learner {}: {e}", member.name)),
            }
        }
        self.aim_front();
        problems
    }

    /// The members etcd lists, and the client address of the running
    /// member that listed them: voters are asked first, as a learner
    /// answers no MemberList. Which running members are learners is taken
    /// from it (those it does not list as started voters, by peer URL).
    async fn list(&mut self) -> Result<(SocketAddr, Vec<Member>), EtcdApiError> {
        let mut asked: Vec<&String> = self.running.keys().collect();
        asked.sort_by_key(|name| self.learners.contains(*name));
        let addrs: Vec<SocketAddr> = asked.iter().filter_map(|name| self.client(name)).collect();
        let mut refused = EtcdApiError::Refused {
            addr: self.front.addr,
            what: "list",
            message: "no member of the ring runs".into(),
        };
        for addr in addrs {
            match etcd_api::list(addr).await {
                Ok(members) => {
                    let voters: BTreeSet<&String> = members
                        .iter()
                        .filter(|m| m.voter())
                        .flat_map(|m| &m.peer_urls)
                        .collect();
                    self.learners = self
                        .running
                        .keys()
                        .filter(|name| {
                            let url = self.files(name, self.ports[*name]).peer_url();
                            !voters.contains(&url)
                        })
                        .cloned()
                        .collect();
                    self.aim_front();
                    return Ok((addr, members));
                }
                Err(e) => refused = e,
            }
        }
        Err(refused)
    }

    fn files(&self, name: &str, ports: Ports) -> MemberFiles {
        MemberFiles::of(&self.layout, name, ports)
    }

    /// Removes `name` from etcd's membership (if it is listed), through a
    /// running voter, then its process and data.
    async fn remove(&mut self, name: &str) -> Result<(), EtcdApiError> {
        let peer_url = self.files(name, self.ports[name]).peer_url();
        if !self.running.is_empty() {
            let (addr, members) = self.list().await?;
            if let Some(member) = members.iter().find(|m| m.peer_urls.contains(&peer_url)) {
                // Through another member when one runs: a member removing
                // itself stops answering at once.
                let through = self.any_voter(Some(name)).unwrap_or(addr);
                etcd_api::remove(through, member.id).await?;
            }
        } else if self.ports.keys().any(|other| other != name) {
            // Nothing runs to ask; the others' data still lists it.
            return Err(EtcdApiError::Refused {
                addr: self.front.addr,
                what: "remove",
                message: "no member of the ring runs".into(),
            });
        }
        self.running.remove(name);
        let _ = std::fs::remove_dir_all(self.files(name, self.ports[name]).data);
        if let Some(ports) = self.ports.remove(name) {
            ports.release();
        }
        let _ = self.save();
        self.aim_front();
        Ok(())
    }

    /// Starts member `name`: with its data as itself, as the ring's first
    /// member, or joined through a running member. Some(problem): it has
    /// to wait.
    async fn start(
        &mut self,
        name: &str,
        restorer: Option<&Restorer<'_>>,
    ) -> Result<Option<String>, RingError> {
        // No member has data or runs (one just started may have written
        // none yet).
        let founding = self.running.is_empty()
            && !self
                .ports
                .iter()
                .any(|(other, ports)| self.files(other, *ports).has_data());
        let ports = match self.ports.get(name) {
            Some(ports) => *ports,
            None => Ports::free()?,
        };
        let member = self.files(name, ports);
        self.ports.insert(name.to_string(), ports);
        self.save()?;
        if member.has_data() {
            self.spawn(&member, &member.alone(), "existing")?;
            // A voter or a learner, as etcd will list it.
            self.learners.insert(name.to_string());
            return Ok(None);
        }
        if founding {
            if let Some(r) = restorer {
                restore::if_pending(r.sim, r.binaries, r.store, &self.layout, &member).await?;
            }
            self.spawn(&member, &member.alone(), "new")?;
            return Ok(None);
        }
        // A learner takes no membership change.
        let Some(addr) = self.any_voter(None) else {
            return Ok(Some("no running voter to join through".into()));
        };
        match self.join(addr, &member).await {
            Ok(Some(cluster)) => {
                self.spawn(&member, &cluster, "existing")?;
                self.learners.insert(name.to_string());
                Ok(None)
            }
            Ok(None) => Ok(None),
            Err(problem) => Ok(Some(problem)),
        }
    }

    /// Adds `member` as a learner through `addr` unless etcd lists it
    /// already (added before it could start: that needs no quorum again,
    /// and without it the ring may have none); the `--initial-cluster` it
    /// then starts with. None: the ring is starting or has no quorum, which
    /// etcd's MemberAdd needs (kube-apiserver's readiness shows it): the
    /// next pass tries again.
    async fn join(&self, addr: SocketAddr, member: &MemberFiles) -> Result<Option<String>, String> {
        let ours = member.peer_url();
        let mut members = etcd_api::list(addr).await.map_err(|e| e.to_string())?;
        if !members.iter().any(|m| m.peer_urls.contains(&ours)) {
            if !etcd_api::healthy(addr).await {
                return Ok(None);
            }
            members = etcd_api::add_learner(addr, &ours)
                .await
                .map_err(|e| e.to_string())?;
        }
        let mut cluster = Vec::new();
        for m in &members {
            let url = m.peer_urls.first().cloned().unwrap_or_default();
            let name = if url == ours {
                member.name.clone()
            } else if m.started() {
                m.name.clone()
            } else {
                return Err(format!(
                    "member {url} was added but has not started yet (etcd takes one learner at a time)"
                ));
            };
            cluster.push(format!("{name}={url}"));
        }
        Ok(Some(cluster.join(",")))
    }

    fn spawn(&mut self, member: &MemberFiles, cluster: &str, state: &str) -> Result<(), RingError> {
        std::fs::create_dir_all(&self.layout.dir).map_err(|source| RingError::Write {
            path: self.layout.dir.clone(),
            source,
        })?;
        let process = Component::spawn(
            "etcd",
            &self.binary,
            &member.args(cluster, state),
            &self.layout.dir,
        )?;
        self.running.insert(member.name.clone(), process);
        Ok(())
    }

    /// Where member `name` serves clients.
    fn client(&self, name: &str) -> Option<SocketAddr> {
        Some(self.files(name, *self.ports.get(name)?).client())
    }

    /// A running voter's client address, other than `except`.
    fn any_voter(&self, except: Option<&str>) -> Option<SocketAddr> {
        self.voters(except).next()
    }

    fn voters<'s>(&'s self, except: Option<&'s str>) -> impl Iterator<Item = SocketAddr> + 's {
        self.running
            .keys()
            .filter(move |name| Some(name.as_str()) != except && !self.learners.contains(*name))
            .filter_map(|name| self.client(name))
    }

    fn aim_front(&self) {
        let targets = self.voters(None).collect();
        self.front.aim(targets);
    }

    fn save(&self) -> Result<(), RingError> {
        let path = self.layout.path("etcd/members.json");
        let write = |source| RingError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(self.layout.path("etcd")).map_err(write)?;
        let text = serde_json::to_vec(&self.ports).map_err(|e| write(std::io::Error::other(e)))?;
        std::fs::write(&path, text).map_err(write)
    }
}

/// The member of `leaving` that stands for the same node as `name` (its
/// hostname), if any.
fn same_node<'l>(leaving: &'l [String], name: &str) -> Option<&'l String> {
    let (hostname, _) = parse_member_name(name)?;
    leaving
        .iter()
        .find(|old| parse_member_name(old).is_some_and(|(other, _)| other == hostname))
}

#[cfg(test)]
#[path = "etcd_ring_tests.rs"]
mod tests;
