//! One node of a clustered MQTT 5 broker on loopback, for covo's fleet tests: rmqtt with raft
//! clustering (`rmqtt-cluster-raft`), shared subscriptions and retained messages.
//!
//! ```text
//! covo-fleet-broker --id 1 --mqtt 127.0.0.1:1883 \
//!     --grpc 1@127.0.0.1:5361,2@127.0.0.1:5362,3@127.0.0.1:5363 \
//!     --raft 1@127.0.0.1:6001,2@127.0.0.1:6002,3@127.0.0.1:6003
//! ```
//!
//! `--acl FILE` turns access control on: FILE is an `rmqtt-acl` rule file (the shipped template is
//! `packaging/rmqtt/covo-acl.toml`, with credentials added); without it every client may do
//! anything, which is what the load tests use.
//!
//! `--grpc` and `--raft` list every node of the cluster, this one included; the node listens on
//! its own entries. A node that finds no leader among the others becomes one, so start the
//! first node alone and the others once it listens (tests/fleet/cluster.py does); a node that
//! comes back later joins the leader it finds. Logs go to stderr (`RUST_LOG`, default `info`).

use rmqtt::{context::ServerContext, net::Builder, node::Node, server::MqttServer};
use std::net::SocketAddr;
use std::num::NonZeroU16;
use std::time::Duration;

struct Args {
    id: u64,
    mqtt: SocketAddr,
    grpc: Vec<(u64, SocketAddr)>,
    raft: Vec<(u64, SocketAddr)>,
    acl: Option<String>,
}

fn nodes(list: &str) -> Result<Vec<(u64, SocketAddr)>, String> {
    list.split(',')
        .map(|n| {
            let (id, addr) = n
                .split_once('@')
                .ok_or_else(|| format!("`{n}`: expected ID@HOST:PORT"))?;
            let id = id.parse().map_err(|e| format!("`{n}`: node id: {e}"))?;
            let addr = addr.parse().map_err(|e| format!("`{n}`: address: {e}"))?;
            Ok((id, addr))
        })
        .collect()
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut id, mut mqtt, mut grpc, mut raft, mut acl) = (None, None, None, None, None);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--id" => id = Some(value.parse().map_err(|e| format!("--id: {e}"))?),
            "--mqtt" => mqtt = Some(value.parse().map_err(|e| format!("--mqtt: {e}"))?),
            "--grpc" => grpc = Some(nodes(&value)?),
            "--raft" => raft = Some(nodes(&value)?),
            "--acl" => {
                acl = Some(std::fs::read_to_string(&value).map_err(|e| format!("--acl {value}: {e}"))?)
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let missing = |f: &str| format!("{f} is required");
    let a = Args {
        id: id.ok_or_else(|| missing("--id"))?,
        mqtt: mqtt.ok_or_else(|| missing("--mqtt"))?,
        grpc: grpc.ok_or_else(|| missing("--grpc"))?,
        raft: raft.ok_or_else(|| missing("--raft"))?,
        acl,
    };
    if !a.grpc.iter().any(|(i, _)| *i == a.id) || !a.raft.iter().any(|(i, _)| *i == a.id) {
        return Err(format!("node {} is not in --grpc and --raft", a.id));
    }
    Ok(a)
}

fn toml_list(nodes: &[(u64, SocketAddr)]) -> String {
    let items: Vec<String> = nodes.iter().map(|(i, a)| format!("\"{i}@{a}\"")).collect();
    format!("[{}]", items.join(", "))
}

#[tokio::main]
async fn main() -> rmqtt::Result<()> {
    // rmqtt-acl logs its whole configuration, passwords included, at info.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,rmqtt_acl=warn")).init();
    let a = args().unwrap_or_else(|e| {
        eprintln!("covo-fleet-broker: {e}");
        std::process::exit(2)
    });
    let own_grpc = a.grpc.iter().find(|(i, _)| *i == a.id).map(|(_, s)| *s);
    let mut scx = ServerContext::new()
        // Never refuse connections for load: 1,000 gateways start on a 2-core machine.
        .node(Node::new(a.id, 1000.0, 1000.0, Duration::from_secs(5)))
        .busy_check_enable(false)
        // No plugin reads a file: each one's configuration is given here.
        .plugins_config_dir("/nonexistent/covo-fleet-broker/")
        .plugins_config_map_add(
            "rmqtt-cluster-raft",
            format!(
                // A node killed with SIGKILL leaves its raft port in TIME_WAIT: rebind it.
                // A client whose node died reconnects elsewhere only once the new node has
                // given up on the dead one's session (its gRPC call) and on the client id's
                // handshake lock: 10 s each by default, here 3 and 5 s.
                "node_grpc_addrs = {}\nraft_peer_addrs = {}\nraft.grpc_reuseaddr = true\n\
                 node_grpc_client_timeout = \"3s\"\ntry_lock_timeout = \"5s\"\n",
                toml_list(&a.grpc),
                toml_list(&a.raft)
            ),
        )
        .plugins_config_map_add(
            "rmqtt-retainer",
            "storage.type = \"ram\"\nmax_retained_messages = 0\nmax_payload_size = \"1MB\"\n",
        )
        .plugins_config_map_add("rmqtt-shared-subscription", "");
    if let Some(rules) = &a.acl {
        scx = scx.plugins_config_map_add("rmqtt-acl", rules.as_str());
    }
    let scx = scx.build().await;
    if let Some(addr) = own_grpc {
        scx.node.start_grpc_server(scx.clone(), addr, true, false);
    }
    rmqtt_retainer::register(&scx, true, false).await?;
    rmqtt_shared_subscription::register(&scx, true, false).await?;
    rmqtt_cluster_raft::register(&scx, true, true).await?;
    if a.acl.is_some() {
        // Connections, subscriptions and publications are judged by the rules; a client whose
        // publication is refused keeps its connection (MQTT 5: PUBACK "not authorized").
        rmqtt_acl::register(&scx, true, true).await?;
    }
    MqttServer::new(scx)
        .listener(
            Builder::new()
                .name("external/tcp")
                .laddr(a.mqtt)
                .nodelay(true)
                .reuseaddr(Some(true))
                // With --acl, a client without credentials is judged by the rules (the shipped
                // template refuses it).
                .allow_anonymous(a.acl.is_none())
                .max_inflight(NonZeroU16::new(64).expect("non-zero"))
                .max_mqueue_len(10_000)
                .bind()?
                .tcp()?,
        )
        .build()
        .run()
        .await?;
    Ok(())
}
