//! A real mosquitto for tests: `Mosquitto::start()` runs one on 127.0.0.1 on a free port with
//! `set_tcp_nodelay true` (without it a QoS 1 round trip costs ~88 ms instead of ~0.4 ms),
//! anonymous access and no persistence, from a config file in a fresh temporary folder, and kills
//! it on drop. It writes no pid file (mosquitto as root drops to user `mosquitto` before writing
//! one). A missing mosquitto is a loud failure, never a skip: `tests/run-all.sh` installs it.
//!
//! `Mosquitto::start_with` adds password authentication (a `mosquitto_passwd` file, anonymous
//! access off) and/or TLS (a throwaway CA and a server certificate for 127.0.0.1, made with the
//! `openssl` command), client certificates as identities, and an ACL file.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running broker.
pub struct Mosquitto {
    child: Child,
    port: u16,
    dir: PathBuf,
    tls: bool,
}

/// How to set a broker up beyond the defaults.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Users and passwords; when non-empty, anonymous clients are refused.
    pub users: Vec<(String, String)>,
    /// Serve MQTT over TLS only (`mqtts://`), with a certificate for 127.0.0.1.
    pub tls: bool,
    /// mosquitto's `max_packet_size` (default 2,000,000): a smaller broker limit, which
    /// mosquitto announces in its CONNACK.
    pub max_packet_size: Option<u32>,
    /// With `tls`: every client must present a certificate signed by the broker's CA
    /// ([`Mosquitto::client_cert`] makes one), and its CN is the client's user name, which an
    /// ACL's `%u` names (`require_certificate`, `use_identity_as_username`).
    pub client_certs: bool,
    /// An ACL file (mosquitto's `acl_file`), copied into the broker's folder.
    pub acl_file: Option<PathBuf>,
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (tests/run-all.sh installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req` arguments for a new P-256 key, unencrypted.
const EC_KEY: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

/// A CA (`ca.crt`) and a server certificate for 127.0.0.1/localhost signed by it.
fn make_certs(dir: &std::path::Path) {
    let ec = EC_KEY;
    run(Command::new("openssl")
        .current_dir(dir)
        .args(["req", "-x509"])
        .args(ec)
        .args(["-keyout", "ca.key", "-out", "ca.crt", "-days", "2"])
        .args(["-subj", "/CN=covo test CA"]));
    run(Command::new("openssl")
        .current_dir(dir)
        .arg("req")
        .args(ec)
        .args(["-keyout", "server.key", "-out", "server.csr"])
        .args(["-subj", "/CN=127.0.0.1"]));
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n\
         basicConstraints=CA:FALSE\n",
    )
    .expect("write server.ext");
    run(Command::new("openssl")
        .current_dir(dir)
        .args([
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
        ])
        .args(["-CAcreateserial", "-out", "server.crt", "-days", "2"])
        .args(["-extfile", "server.ext"]));
    // mosquitto may read them after dropping to its own user.
    for f in ["server.key", "server.crt", "ca.crt"] {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o644));
    }
}

fn spawn(bin: &std::path::Path, dir: &std::path::Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("mosquitto.log"))
        .expect("log file");
    Command::new(bin)
        .arg("-c")
        .arg(dir.join("mosquitto.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
}

fn binary() -> PathBuf {
    for dir in std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/sbin", "/usr/local/sbin"])
    {
        let p = PathBuf::from(dir).join("mosquitto");
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "mosquitto is not installed: the MQTT tests need a real broker. \
         Install it with `apt-get install -y mosquitto` (tests/run-all.sh does this)"
    );
}

impl Mosquitto {
    /// Starts a broker and waits until it accepts connections.
    pub fn start() -> Mosquitto {
        Self::start_with(&Setup::default())
    }

    /// Starts a broker with authentication and/or TLS.
    pub fn start_with(setup: &Setup) -> Mosquitto {
        let bin = binary();
        for _attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("no free port on 127.0.0.1")
                .port();
            static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let dir = std::env::temp_dir()
                .join(format!("covo-mosquitto-{}-{port}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp folder");
            let conf = dir.join("mosquitto.conf");
            let mut text = format!(
                "listener {port} 127.0.0.1\npersistence false\n\
                 set_tcp_nodelay true\nmax_packet_size {}\nlog_dest stderr\n",
                setup.max_packet_size.unwrap_or(2_000_000)
            );
            if setup.users.is_empty() {
                text.push_str("allow_anonymous true\n");
            } else {
                let file = dir.join("passwd");
                for (i, (user, pass)) in setup.users.iter().enumerate() {
                    let mut c = Command::new("mosquitto_passwd");
                    if i == 0 {
                        c.arg("-c");
                    }
                    run(c.arg("-b").arg(&file).arg(user).arg(pass));
                }
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644));
                text.push_str(&format!(
                    "allow_anonymous false\npassword_file {}\n",
                    file.display()
                ));
            }
            if setup.tls {
                make_certs(&dir);
                text.push_str(&format!(
                    "cafile {0}/ca.crt\ncertfile {0}/server.crt\nkeyfile {0}/server.key\n",
                    dir.display()
                ));
                if setup.client_certs {
                    text.push_str("require_certificate true\nuse_identity_as_username true\n");
                }
            }
            if let Some(acl) = &setup.acl_file {
                let copy = dir.join("acl");
                std::fs::copy(acl, &copy)
                    .unwrap_or_else(|e| panic!("cannot copy {}: {e}", acl.display()));
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644));
                text.push_str(&format!("acl_file {}\n", copy.display()));
            }
            std::fs::write(&conf, text).expect("write mosquitto.conf");
            let mut child = spawn(&bin, &dir);
            let end = Instant::now() + Duration::from_secs(10);
            while Instant::now() < end {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // port taken meanwhile, or a config problem: try again
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Mosquitto {
                        child,
                        port,
                        dir,
                        tls: setup.tls,
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            eprintln!(
                "mosquitto did not come up on {port}: {}",
                std::fs::read_to_string(dir.join("mosquitto.log")).unwrap_or_default()
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
        panic!("mosquitto did not start after 5 attempts");
    }

    /// Kills the broker (clients see their connection drop; retained messages are lost, as
    /// persistence is off) and starts it again on the same port.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let bin = binary();
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            self.child = spawn(&bin, &self.dir);
            let up = Instant::now() + Duration::from_secs(2);
            while Instant::now() < up {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break; // the port is not free yet
                }
                if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("mosquitto did not restart on port {}", self.port);
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `mqtt://127.0.0.1:PORT`, or `mqtts://` with TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// What mosquitto has logged so far (connections, disconnections and their reasons).
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(self.dir.join("mosquitto.log")).unwrap_or_default())
            .into_owned()
    }

    /// The CA certificate (PEM) that signed the broker's certificate, with TLS.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.tls.then(|| self.dir.join("ca.crt"))
    }

    /// A client certificate and its key (PEM files, in that order) for `name` (its CN, which
    /// [`Setup::client_certs`] makes the client's user name), signed by the broker's CA.
    /// Needs TLS.
    pub fn client_cert(&self, name: &str) -> (PathBuf, PathBuf) {
        assert!(self.tls, "client certificates need a TLS broker");
        let (cert, key) = (format!("{name}.crt"), format!("{name}.key"));
        let ec = EC_KEY;
        let csr = format!("{name}.csr");
        run(Command::new("openssl")
            .current_dir(&self.dir)
            .arg("req")
            .args(ec)
            .args(["-keyout", &key, "-out", &csr])
            .args(["-subj", &format!("/CN={name}")]));
        let ext = format!("{name}.ext");
        std::fs::write(
            self.dir.join(&ext),
            "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n",
        )
        .expect("write the extension file");
        run(Command::new("openssl")
            .current_dir(&self.dir)
            .args([
                "x509", "-req", "-in", &csr, "-CA", "ca.crt", "-CAkey", "ca.key",
            ])
            .args(["-CAcreateserial", "-out", &cert, "-days", "2"])
            .args(["-extfile", &ext]));
        (self.dir.join(cert), self.dir.join(key))
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A message a [`Raw`] client received.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// The topic it came on.
    pub topic: String,
    /// Its payload.
    pub payload: Vec<u8>,
    /// Whether the broker delivered it as retained.
    pub retain: bool,
    /// Its MQTT 5 correlation data, if any.
    pub correlation: Option<Vec<u8>>,
}

/// A plain MQTT 5 client for tests, outside covo: QoS 1, TCP_NODELAY, 1 MiB packets. Every
/// message on its filter arrives on `rx`; [`raw`] returns once the subscription is in place.
pub struct Raw {
    /// The client, to publish with.
    pub client: rumqttc::v5::Client,
    /// What arrived on the filter, in order.
    pub rx: std::sync::mpsc::Receiver<Incoming>,
}

/// Connects a [`Raw`] client to the broker on `port` and subscribes it to `filter`.
pub fn raw(port: u16, filter: &str) -> Raw {
    use rumqttc::v5::mqttbytes::v5::Packet;
    use rumqttc::v5::{Client, Event, MqttOptions};
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut o = MqttOptions::new(format!("raw-{}-{n}", std::process::id()), "127.0.0.1", port);
    o.set_max_packet_size(Some(1 << 20));
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    o.set_network_options(net);
    let (client, mut conn) = Client::new(o, 64);
    client
        .subscribe(filter, rumqttc::v5::mqttbytes::QoS::AtLeastOnce)
        .expect("subscribe");
    let (tx, rx) = std::sync::mpsc::channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for ev in conn.iter() {
            match ev {
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    let _ = ready_tx.send(());
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let m = Incoming {
                        topic: String::from_utf8_lossy(&p.topic).into_owned(),
                        payload: p.payload.to_vec(),
                        retain: p.retain,
                        correlation: p
                            .properties
                            .and_then(|pr| pr.correlation_data)
                            .map(|c| c.to_vec()),
                    };
                    if tx.send(m).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("no SUBACK from the broker within 5 s");
    Raw { client, rx }
}

impl Raw {
    /// The first message on `topic` before `max`, as JSON (`null` when it is not JSON), and
    /// whether it was retained. Messages on other topics are skipped.
    pub fn next_on(&self, topic: &str, max: Duration) -> Option<(serde_json::Value, bool)> {
        let end = Instant::now() + max;
        loop {
            let m = self
                .rx
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .ok()?;
            if m.topic == topic {
                let v = serde_json::from_slice(&m.payload).unwrap_or(serde_json::Value::Null);
                return Some((v, m.retain));
            }
        }
    }
}
