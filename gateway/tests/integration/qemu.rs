//! The gateway against the real firmware image running in QEMU (lm3s6965evb, UART0 on a pty):
//! `covo tools call` for info, GPIO, ADC and PWM, then QEMU is killed and restarted and the link
//! reconnects; and MCU events reaching watches through `covo::watch::McuWatcher` (what `covo run`
//! and `covo chat` run). Needs `qemu-system-arm` and the release image; `tests/run-all.sh` installs and
//! builds both. Missing parts fail the test loudly; it never skips.

use covo::config::Config;
use covo::exec::Session;
use covo::hardware::Board;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_board::board::BoardDef;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

fn image() -> PathBuf {
    // The image's own package builds into its `target/`, or into $CARGO_TARGET_DIR when set.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/qemu-lm3s6965/target")
        });
    let p = target.join("thumbv7m-none-eabi/release/covo-fw-qemu");
    assert!(
        p.exists(),
        "the QEMU firmware image is missing at {}: build it with `(cd firmware/qemu-lm3s6965 && cargo build --release)` (tests/run-all.sh does)",
        p.display()
    );
    p
}

/// A running QEMU and the pty its UART0 is on.
struct Qemu {
    child: Child,
    pty: String,
}

impl Qemu {
    fn start() -> Qemu {
        let mut child = Command::new("qemu-system-arm")
            .args([
                "-cpu",
                "cortex-m3",
                "-machine",
                "lm3s6965evb",
                "-nographic",
                "-monitor",
                "none",
            ])
            .args([
                "-semihosting-config",
                "enable=on,target=native",
                "-serial",
                "pty",
                "-kernel",
            ])
            .arg(image())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("qemu-system-arm must be installed (apt-get install -y qemu-system-arm)");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let pty = loop {
            let line = lines
                .next()
                .expect("QEMU exited before printing its pty")
                .unwrap();
            if let Some(rest) = line.strip_prefix("char device redirected to ") {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep draining stdout (the firmware's semihosting banner) so QEMU never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Qemu { child, pty }
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A board whose one microcontroller is at `link` (a symlink we repoint when QEMU restarts,
/// as udev's by-id links follow a re-plugged Pico).
fn board_toml(link: &Path) -> String {
    format!(
        r#"[board]
name = "qemu-host"
model = "host with a QEMU microcontroller"
backend = "linux"

[[serial]]
name = "qemu"
path = "{}"
baud = 115200

[[device]]
name = "lm3s"
driver = "mcu"
port = "qemu"

[policy]
[[policy.mcu]]
device = "lm3s"
outputs = [0, 2]
pwm = [{{ channel = 5, min_hz = 10.0, max_hz = 100000.0, max_duty = 1.0 }}]
"#,
        link.display()
    )
}

fn point(link: &Path, pty: &str) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(pty, link).unwrap();
}

fn cli_output(dir: &Path, cfg: &Path, tool: &str, args: &str) -> (Option<i32>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args(["tools", "call", tool, args, "--config"])
        .arg(cfg)
        .env("COVO_HOME", dir.join("home"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{tool}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn cli(dir: &Path, cfg: &Path, tool: &str, args: &str) -> Value {
    let (code, v) = cli_output(dir, cfg, tool, args);
    assert_eq!(code, Some(0), "{tool} {args}: {v}");
    v
}

/// The first `mcu_info` of a QEMU just started: its firmware may still be booting on a busy
/// machine (CI once saw "no answer within 3000 ms"), so it is asked again until it answers.
fn first_info(rt: &Runtime, s: &Session) -> Value {
    eventually(
        std::time::Duration::from_secs(60),
        "the firmware's first answer",
        || rt.call(s, Via::Direct, "mcu_info", json!({})).ok(),
    )
}

#[test]
fn the_gateway_drives_the_qemu_firmware_and_reconnects_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu-tty");
    let board = dir.path().join("board.toml");
    std::fs::write(&board, board_toml(&link)).unwrap();
    let cfg = dir.path().join("covo.toml");
    std::fs::write(&cfg, format!("board = {:?}\n", board.display().to_string())).unwrap();

    let qemu = Qemu::start();
    point(&link, &qemu.pty);
    // The firmware may still be booting on a busy machine: ask until it answers.
    let info = eventually(
        std::time::Duration::from_secs(60),
        "the firmware's first answer",
        || match cli_output(dir.path(), &cfg, "mcu_info", "{}") {
            (Some(0), v) => Some(v),
            _ => None,
        },
    );
    assert_eq!(info["info"]["board"], "lm3s6965-qemu", "{info}");
    cli(dir.path(), &cfg, "mcu_gpio_write", r#"{"pin":2,"level":1}"#);
    let r = cli(dir.path(), &cfg, "mcu_gpio_read", r#"{"pin":2}"#);
    assert_eq!(r["level"], 1, "{r}");
    let adc = cli(dir.path(), &cfg, "mcu_adc_read", r#"{"channel":1}"#);
    assert!(adc["raw"].as_u64().is_some(), "{adc}");
    let pwm = cli(
        dir.path(),
        &cfg,
        "mcu_pwm_set",
        r#"{"pin":5,"duty":0.25,"frequency_hz":1000}"#,
    );
    assert_eq!(pwm["duty"], 0.25, "{pwm}");

    // One long-lived runtime: kill QEMU under it, start a new one, and the next read reconnects.
    let def = BoardDef::load(&board).unwrap();
    let mut opts = covo::tools::options(Config::default());
    opts.board = Some(Arc::new(Board::from_def(def)));
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    let s = Session::new("qemu", "cli");
    rt.call(&s, Via::Direct, "mcu_info", json!({})).unwrap();
    drop(qemu);
    let qemu = Qemu::start();
    point(&link, &qemu.pty);
    let again = first_info(&rt, &s);
    assert_eq!(again["info"]["board"], "lm3s6965-qemu");
    let list = rt.call(&s, Via::Direct, "mcu_list", json!({})).unwrap();
    let link_stats = &list["microcontrollers"][0]["link"];
    assert!(link_stats["reconnects"].as_u64().unwrap() >= 1, "{list}");
    drop(qemu);
}

/// Polls `f` every 50 ms until it gives `Some`, for at most `within`.
fn eventually<T>(within: std::time::Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let until = std::time::Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn watch(rt: &Runtime, s: &Session, id: &Value) -> Value {
    let list = rt.call(s, Via::Direct, "watch_list", json!({})).unwrap();
    list["watches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| &w["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("watch {id} missing: {list}"))
}

#[test]
fn mcu_pin_changes_and_adc_thresholds_fire_watches_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu-tty");
    let board = dir.path().join("board.toml");
    std::fs::write(&board, board_toml(&link)).unwrap();
    let qemu = Qemu::start();
    point(&link, &qemu.pty);

    let mut opts = covo::tools::options(Config::default());
    opts.board = Some(Arc::new(Board::from_def(BoardDef::load(&board).unwrap())));
    let rt = Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    );
    let s = Session::new("qemu-events", "cli");
    // Pin 1 is jumpered to pin 0 in the simulated board: driving 0 changes what 1 reads.
    // When pin 1 goes high, the watch drives pin 2 (an allowed output) high, through the
    // pipeline and its policy.
    let on_pin = rt
        .call(
            &s,
            Via::Direct,
            "watch_create",
            json!({"sensor": "lm3s", "quantity": "pin1", "op": ">", "threshold": 0.5,
                   "action": "tool", "tool": "mcu_gpio_write", "arguments": {"pin": 2, "level": 1}}),
        )
        .unwrap();
    // ADC channel 0 is a triangle 0..=3000 mV with a period of 2048 ms.
    let on_adc = rt
        .call(
            &s,
            Via::Direct,
            "watch_create",
            json!({"sensor": "lm3s", "quantity": "adc0", "op": ">", "threshold": 2500,
                   "hysteresis": 1000, "message": "adc0 is high"}),
        )
        .unwrap();
    // A quantity a microcontroller does not have is refused with its path.
    let bad = rt
        .call(
            &s,
            Via::Direct,
            "watch_create",
            json!({"sensor": "lm3s", "quantity": "temperature", "op": ">", "threshold": 1}),
        )
        .unwrap_err()
        .to_string();
    assert!(bad.contains("/quantity") && bad.contains("pinN"), "{bad}");

    let _watcher = covo::watch::McuWatcher::spawn(rt.clone());
    let hw = rt.board().hardware().unwrap();
    let subscribed = |hw: &covo_hal_tools::hw::Hardware| {
        hw.with_mcu("lm3s", |l| l.subscription())
            .ok()
            .filter(|m| m.pin_change == 0b10 && m.adc_channels == 0b1)
    };
    eventually(
        std::time::Duration::from_secs(10),
        "the subscription",
        || subscribed(&hw),
    );
    let level = |pin: u8| {
        rt.call(&s, Via::Direct, "mcu_gpio_read", json!({"pin": pin}))
            .unwrap()["level"]
            .clone()
    };
    assert_eq!(level(2), 0);

    rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 0, "level": 1}),
    )
    .unwrap();
    eventually(
        std::time::Duration::from_secs(5),
        "the pin watch's action",
        || (level(2) == 1).then_some(()),
    );
    let w = watch(&rt, &s, &on_pin["id"]);
    assert_eq!(w["fired_count"], 1, "{w}");
    eventually(std::time::Duration::from_secs(5), "the ADC watch", || {
        (watch(&rt, &s, &on_adc["id"])["fired_count"].as_i64() >= Some(1)).then_some(())
    });

    // Pin 1 low again re-arms the pin watch. Then the device restarts: the watcher reconnects,
    // subscribes again (a new handshake clears the device's subscription) and the next change
    // fires the watch again.
    rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 0, "level": 0}),
    )
    .unwrap();
    rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 2, "level": 0}),
    )
    .unwrap();
    eventually(
        std::time::Duration::from_secs(5),
        "the pin watch to re-arm",
        || (watch(&rt, &s, &on_pin["id"])["state"] == "armed").then_some(()),
    );
    let events = |hw: &covo_hal_tools::hw::Hardware| hw.mcu_status("lm3s").unwrap().1;
    let before = events(&hw).events;
    drop(qemu);
    let qemu = Qemu::start();
    point(&link, &qemu.pty);
    // ADC samples (10 a second) flow again only once the new device is subscribed.
    eventually(
        std::time::Duration::from_secs(15),
        "events from the restarted device",
        || {
            let stats = events(&hw);
            (stats.reconnects >= 1 && stats.events >= before + 10).then_some(())
        },
    );
    rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 0, "level": 1}),
    )
    .unwrap();
    eventually(
        std::time::Duration::from_secs(5),
        "the pin watch after the restart",
        || (level(2) == 1).then_some(()),
    );
    assert_eq!(watch(&rt, &s, &on_pin["id"])["fired_count"], 2);
    drop(qemu);
}

/// `mcu_flash`'s `command` method on the QEMU "board": the command stops the running QEMU,
/// boots the new image and points the port's symlink at the new pty, as a re-plugged board's
/// by-id link would move.
const FLASH_SCRIPT: &str = r#"#!/bin/sh
set -eu
dir=$(dirname "$0")
if [ -f "$dir/qemu.pid" ]; then kill "$(cat "$dir/qemu.pid")" 2>/dev/null || true; fi
rm -f "$dir/qemu.out"
qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -nographic -monitor none \
  -semihosting-config enable=on,target=native -serial pty -kernel "$1" \
  </dev/null >"$dir/qemu.out" 2>/dev/null &
echo $! >"$dir/qemu.pid"
i=0
until grep "char device redirected to" "$dir/qemu.out" >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -lt 400 ] || exit 1; sleep 0.05
done
pty=$(sed -n 's/^char device redirected to \([^ ]*\).*/\1/p' "$dir/qemu.out")
ln -sfn "$pty" "$dir/mcu-tty"
"#;

/// The image with its stamp's name replaced by `name` (the stamp is found as the gateway finds
/// it); `flip_hash` also changes the schema hash, as an image of another covo version has.
fn restamped(image: &[u8], name: &str, flip_hash: bool) -> Vec<u8> {
    let at = image
        .windows(8)
        .position(|w| w == covo_mcu_protocol::STAMP_MAGIC)
        .expect("the image carries a stamp");
    let mut out = image.to_vec();
    let name_at = at + 18;
    out[at + 17] = name.len() as u8;
    out[name_at..name_at + 16].fill(0);
    out[name_at..name_at + name.len()].copy_from_slice(name.as_bytes());
    if flip_hash {
        out[at + 9] ^= 0xff;
    }
    out
}

#[test]
fn the_qemu_firmware_is_flashed_by_restarting_qemu_on_a_new_image_and_reports_its_stamp() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu-tty");
    let script = dir.path().join("flash.sh");
    std::fs::write(&script, FLASH_SCRIPT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let board = dir.path().join("board.toml");
    let text = board_toml(&link).replace(
        "port = \"qemu\"\n",
        &format!(
            "port = \"qemu\"\nflash = {{ method = \"command\", command = [\"{}\", \"{{image}}\"] }}\n",
            script.display()
        ),
    );
    std::fs::write(&board, text).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("firmware")).unwrap();
    let original = std::fs::read(image()).unwrap();
    std::fs::write(
        home.join("firmware/covo-next.elf"),
        restamped(&original, "covo-next 0.2.0", false),
    )
    .unwrap();
    std::fs::write(
        home.join("firmware/covo-other.elf"),
        restamped(&original, "covo-other 9.0", true),
    )
    .unwrap();

    let qemu = Qemu::start();
    let pid_file = dir.path().join("qemu.pid");
    std::fs::write(&pid_file, qemu.child.id().to_string()).unwrap();
    point(&link, &qemu.pty);

    let def = BoardDef::load(&board).unwrap();
    let mut opts = covo::tools::options(Config::default());
    opts.board = Some(Arc::new(Board::from_def(def)));
    opts.approver = Box::new(covo::runtime::AutoApprove);
    opts.home = Some(home.clone());
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    let s = Session::new("qemu-flash", "cli");
    let info = first_info(&rt, &s);
    let before = info["info"]["firmware"].as_str().unwrap().to_string();
    assert!(before.starts_with("covo "), "{info}");

    // An image of another schema is refused before QEMU is touched.
    let r = rt.call(
        &s,
        Via::Direct,
        "mcu_flash",
        json!({"image": "covo-other.elf"}),
    );
    assert!(format!("{r:?}").contains("this gateway speaks"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap(),
        qemu.child.id().to_string(),
        "QEMU was restarted for a refused image"
    );

    let r = rt
        .call(
            &s,
            Via::Direct,
            "mcu_flash",
            json!({"image": "covo-next.elf"}),
        )
        .unwrap();
    let new_pid = std::fs::read_to_string(&pid_file).unwrap();
    // Whatever happens next, the QEMU the script started goes away with the test.
    struct KillOnDrop(String);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = Command::new("kill").arg(self.0.trim()).status();
        }
    }
    let _new = KillOnDrop(new_pid.clone());
    assert_ne!(new_pid.trim(), qemu.child.id().to_string());
    assert_eq!(r["method"], "command");
    assert_eq!(r["firmware_before"], before.as_str());
    assert_eq!(r["firmware"], "covo-next 0.2.0", "{r}");
    assert_eq!(r["running_expected"], true);
    assert_eq!(r["board"], "lm3s6965-qemu");
    // A fresh request over the link reads the version the new image reports.
    let info = rt.call(&s, Via::Direct, "mcu_info", json!({})).unwrap();
    assert_eq!(info["info"]["firmware"], "covo-next 0.2.0", "{info}");
    let g = rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 2, "level": 1}),
    );
    assert!(g.is_ok(), "{g:?}");
    drop(qemu);
}
