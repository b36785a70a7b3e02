//! The one loopback port through which kube-apiserver reaches a ring's
//! real etcd (`etcd_ring`): each connection is passed, as plain TCP, to
//! the first of the ring's running voters that takes it; with none, it is
//! closed. The ring aims it anew whenever its members change.

use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Front {
    pub addr: SocketAddr,
    targets: Arc<Mutex<Vec<SocketAddr>>>,
    task: JoinHandle<()>,
}

impl Front {
    /// A front on a free loopback port, passing connections nowhere yet.
    pub fn bind() -> std::io::Result<Self> {
        let std = StdListener::bind(("127.0.0.1", 0))?;
        std.set_nonblocking(true)?;
        let addr = std.local_addr()?;
        let listener = TcpListener::from_std(std)?;
        let targets: Arc<Mutex<Vec<SocketAddr>>> = Arc::default();
        let task = tokio::spawn(pass_on(listener, targets.clone()));
        Ok(Self {
            addr,
            targets,
            task,
        })
    }

    /// Where new connections go from now on, in this order.
    pub fn aim(&self, targets: Vec<SocketAddr>) {
        *self.targets.lock().unwrap_or_else(|e| e.into_inner()) = targets;
    }

    pub fn targets(&self) -> Vec<SocketAddr> {
        self.targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Passes each connection on until aborted; the connections end with it.
async fn pass_on(listener: TcpListener, targets: Arc<Mutex<Vec<SocketAddr>>>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (mut client, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors for a moment, say: not for good.
                tracing::warn!("etcd front: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let targets = targets.lock().unwrap_or_else(|e| e.into_inner()).clone();
        connections.spawn(async move {
            for target in targets {
                if let Ok(mut member) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut member).await;
                    return;
                }
            }
        });
    }
}
