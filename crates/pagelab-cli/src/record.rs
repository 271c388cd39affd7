//! `pagelab record`: run a program under Valgrind and write what it did to memory as a
//! native trace, as it runs.
//!
//! The fast path is pagelab's own Valgrind tool (recorder/, built by `make recorder`
//! into `target/valgrind/{full,bare}`): it writes the compact `.pgrec` stream into a
//! FIFO, and this process compresses it into the native format on the other core. Where
//! the tool is not built, Valgrind's stock lackey tool runs instead (its text through
//! the same FIFO), which is much slower and has no allocation events or client requests.
//!
//! Robustness: the trace is written as it goes into a temporary file beside the output
//! (`crate::output`), renamed to the output's name when the recording ends. A program
//! that crashes or is killed still leaves a complete trace of what it did until then
//! (with a warning); SIGINT or SIGTERM stop the program and finish the trace the same
//! way. If recording fails (the disk fills), the temporary file is kept and named: it
//! holds every chunk written before, which `--salvage` reads; so does the temporary
//! file if this process is killed outright.

use crate::exec_follow::Followed;
use crate::fifo::{describe, open_unless_ended, open_when_written, Fifo};
use crate::progress::Progress;
use crate::target::Target;
use anyhow::{bail, Context, Result};
use pagelab_core::event::AccessKind;
use pagelab_core::trace::input::Compression;
use pagelab_core::trace::lackey::LackeyReader;
use pagelab_core::trace::native::{NativeWriter, WriterOptions};
use pagelab_core::trace::pgrec::PgrecReader;
use pagelab_core::trace::{Metadata, TraceReader};
use pagelab_core::Batch;
use std::ffi::OsString;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fetches {
    /// Data references only.
    None,
    /// One instruction fetch whenever execution moves to another 4 KiB page (enough
    /// for an instruction TLB, and much cheaper).
    Page,
    /// Every instruction fetch.
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// pagelab's own Valgrind tool (recorder/), when built; else lackey.
    Auto,
    /// pagelab's own Valgrind tool; an error when it is not built.
    Pagelab,
    /// Valgrind's stock lackey tool: slower, no allocation events, no client requests.
    Lackey,
}

#[derive(clap::Args)]
pub struct RecordArgs {
    /// The native trace to write (with --workload, NAME.plt by default; "-" for
    /// standard output, the program's own output then going to standard error).
    #[arg(short, long, required_unless_present = "workload")]
    output: Option<PathBuf>,
    /// Which instruction fetches to record.
    #[arg(long, value_enum, default_value_t = Fetches::Page)]
    fetches: Fetches,
    /// Record one reference in N (of every kind).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    sample: u32,
    /// Start with tracing off; the program switches it on and off with PAGELAB_START()
    /// and PAGELAB_STOP() (recorder/include/pagelab.h).
    #[arg(long)]
    start_off: bool,
    /// Do not record malloc/free and friends (the program's memory layout is then
    /// exactly what other Valgrind tools see: no preload library).
    #[arg(long)]
    no_allocs: bool,
    #[arg(long, value_enum, default_value_t = Tool::Auto)]
    tool: Tool,
    /// Do not follow the program through exec: a wrapper or shim that replaces itself
    /// with the real program (`exec python3 "$@"`) is recorded up to its exec only.
    /// By default the programs it execs are recorded too, each marked `exec PATH` in
    /// the trace (pagelab's tool only); processes it starts are never recorded.
    #[arg(long)]
    no_follow_exec: bool,
    /// Programs not to follow when exec'd: Valgrind's patterns (`*` and `?`) matched
    /// against the path exec'd, e.g. `--skip-exec '/usr/bin/*'`. Repeatable.
    #[arg(long, value_name = "PATTERN", conflicts_with = "no_follow_exec")]
    skip_exec: Vec<String>,
    /// Record a workload of the catalogue (workloads/catalogue.toml) instead of a
    /// command: its inputs are prepared in a work folder first. Install what it needs
    /// with `workloads/setup.sh NAME`. `--workload list` lists them.
    #[arg(long)]
    workload: Option<String>,
    /// What was traced, for the trace's header (default: the workload or command line).
    #[arg(long)]
    label: Option<String>,
    /// zstd level of the native format (-7 fastest .. 19 smallest).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-7..=19))]
    level: i32,
    /// No progress on standard error, and Valgrind's own messages only on errors.
    #[arg(long, short)]
    quiet: bool,
    /// The program and its arguments (after `--`).
    #[arg(required_unless_present = "workload", last = true)]
    command: Vec<OsString>,
}

/// Where `make recorder` puts the tool: `VALGRIND_LIB` folders with and without the
/// allocation-wrapping preload library. `PAGELAB_VALGRIND_LIB` overrides the search.
pub fn recorder_dir() -> Option<PathBuf> {
    let has_tool = |d: &Path| d.join("full/pagelab-amd64-linux").is_file();
    if let Some(d) = std::env::var_os("PAGELAB_VALGRIND_LIB") {
        return Some(PathBuf::from(d)).filter(|d| has_tool(d));
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // target/release/pagelab -> target/valgrind
        if let Some(target) = exe.parent().and_then(Path::parent) {
            candidates.push(target.join("valgrind"));
        }
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/valgrind"));
    candidates.into_iter().find(|d| has_tool(d))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

/// What lackey cannot do itself, done on its stream: fetch filtering and sampling.
struct LackeyFilter {
    fetches: Fetches,
    sample: u32,
    count: u32,
    last_fetch_page: u64,
}

impl LackeyFilter {
    fn apply(&mut self, batch: &mut Batch) {
        batch.refs.retain(|r| {
            if r.kind == AccessKind::Fetch {
                match self.fetches {
                    Fetches::None => return false,
                    Fetches::Page => {
                        let page = r.addr.0 >> 12;
                        if page == self.last_fetch_page {
                            return false;
                        }
                        self.last_fetch_page = page;
                    }
                    Fetches::All => {}
                }
            }
            self.count += 1;
            if self.count == self.sample {
                self.count = 0;
                true
            } else {
                false
            }
        });
    }
}

/// Record; the exit status: 0, the recorded program's own when it failed (128 + the
/// signal when a signal ended it, as a shell says), or 128 + the signal that
/// interrupted the recording. The trace is written whole in every case.
pub fn run(args: &RecordArgs) -> Result<u8> {
    if args.workload.as_deref() == Some("list") {
        return crate::workloads::list(false).map(|()| 0);
    }
    if args.sample == 0 {
        bail!("--sample: must be at least 1");
    }
    // Past a file-size limit a write fails (EFBIG) like on a full disk, instead of the
    // signal killing us before we can say so.
    // SAFETY: setting a signal's disposition to "ignore" installs no handler.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGXFSZ,
            nix::sys::signal::SigHandler::SigIgn,
        )?;
    }
    if args.workload.is_some() && !args.command.is_empty() {
        bail!("give either --workload or a command after --, not both");
    }
    let valgrind = which("valgrind").context(
        "valgrind is not installed (on Debian: apt-get install valgrind); pagelab record runs programs under it",
    )?;
    let dir = recorder_dir();
    let use_lackey = match (args.tool, &dir) {
        (Tool::Lackey, _) => true,
        (Tool::Pagelab, None) => bail!(
            "pagelab's Valgrind tool is not built (make recorder builds it into target/valgrind)"
        ),
        (Tool::Pagelab, Some(_)) => false,
        (Tool::Auto, None) => {
            eprintln!(
                "pagelab: warning: pagelab's Valgrind tool is not built (make recorder); \
                 recording with lackey, which is many times slower and records no allocations"
            );
            true
        }
        (Tool::Auto, Some(_)) => false,
    };
    let follow = !args.no_follow_exec && !use_lackey;
    if !follow && !args.skip_exec.is_empty() {
        bail!("--skip-exec: lackey does not follow exec (pagelab's tool does)");
    }
    if use_lackey && args.start_off {
        bail!("--start-off needs pagelab's Valgrind tool: lackey ignores client requests");
    }
    let target = match &args.workload {
        Some(name) => crate::workloads::target(name, args.quiet)?,
        None => Target::from_command(&args.command),
    };
    let output = match (&args.output, &args.workload) {
        (Some(o), _) => o.clone(),
        (None, Some(name)) => PathBuf::from(format!("{name}.plt")),
        (None, None) => bail!("-o/--output: name the trace to write"),
    };
    let Some(program) = target.program() else {
        let name = target
            .command
            .first()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        bail!("{name}: no such program (neither a file nor a program in PATH)");
    };
    let mut inputs: Vec<PathBuf> = vec![program];
    inputs.extend(target.stdin.clone());
    inputs.extend(target.stdout.clone());
    let input_refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    crate::output::check(&output, "-o", &input_refs)?;
    let to_stdout = crate::output::is_stdout(&output);
    let fifo = Fifo::new()?;
    let mut cmd = Command::new(&valgrind);
    if let Some(cwd) = &target.cwd {
        cmd.current_dir(cwd);
    }
    if target.clean_env {
        cmd.env_clear();
    }
    for (k, v) in &target.env {
        cmd.env(k, v);
    }
    if let Some(out) = &target.stdout {
        let file =
            File::create(out).with_context(|| format!("{}: cannot create", out.display()))?;
        cmd.stdout(file);
    } else if to_stdout {
        // Standard output carries the trace.
        cmd.stdout(std::io::stderr());
    }
    if let Some(stdin) = &target.stdin {
        let file =
            File::open(stdin).with_context(|| format!("{}: cannot open", stdin.display()))?;
        cmd.stdin(file);
    }
    if let Some(d) = &dir {
        // The same VALGRIND_LIB for every tool, so that the program sees the same
        // environment (and stack addresses) under lackey and under pagelab's tool.
        let lib = if args.no_allocs || use_lackey {
            d.join("bare")
        } else {
            d.join("full")
        };
        cmd.env("VALGRIND_LIB", lib);
    }
    if args.quiet {
        cmd.arg("-q");
    }
    if use_lackey {
        cmd.arg("--tool=lackey")
            .arg("--trace-mem=yes")
            .arg(format!("--log-file={}", fifo.path.display()));
    } else {
        let fetches = match args.fetches {
            Fetches::None => "none",
            Fetches::Page => "page",
            Fetches::All => "all",
        };
        cmd.arg("--tool=pagelab")
            // Call sites are named with the functions inlined into them too.
            .arg("--read-inline-info=yes")
            .arg(format!("--out={}", fifo.path.display()))
            .arg(format!("--fetches={fetches}"))
            .arg(format!("--sample={}", args.sample))
            .arg(format!(
                "--start={}",
                if args.start_off { "no" } else { "yes" }
            ));
        if follow {
            // The program and what it execs; what it starts runs under Valgrind only
            // so that it can exec, and records nothing (not a child of ours).
            cmd.arg("--trace-children=yes")
                .arg(format!("--parent={}", std::process::id()));
            if !args.skip_exec.is_empty() {
                cmd.arg(format!(
                    "--trace-children-skip={}",
                    args.skip_exec.join(",")
                ));
            }
        }
    }
    cmd.args(&target.command);
    // If this process dies, Valgrind and the program stop too, rather than run on
    // with no one reading their trace.
    crate::interrupt::end_with_parent(&mut cmd);
    // Written beside the output and renamed when complete (see `crate::output`).
    let mut pending = match to_stdout {
        true => None,
        false => Some(crate::output::Pending::create(&output)?),
    };
    // SIGINT and SIGTERM stop the program, and the trace is finished with what it did.
    let interrupts = crate::interrupt::Interrupts::catch().context("cannot catch SIGINT")?;
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", valgrind.display()))?;
    let watch = interrupts.stop_on_signal(child.id());
    let result = match pending.as_mut() {
        Some(p) => record(
            args,
            &target,
            &fifo,
            &mut child,
            use_lackey,
            p.file(),
            &output,
        ),
        None => {
            let out = std::io::stdout().lock();
            record(args, &target, &fifo, &mut child, use_lackey, out, &output)
        }
    };
    if result.is_err() {
        // Do not leave the program running with no one reading its trace.
        let _ = child.kill();
    }
    let status = child.wait()?;
    drop(watch);
    let result = match (result, pending) {
        (Ok(summary), Some(p)) => p.commit().map(|()| summary).map_err(Into::into),
        // Nothing recorded: nothing to keep.
        (Err(e), Some(p)) if p.is_empty() => Err(e),
        (Err(e), Some(p)) => Err(match p.keep() {
            Ok(kept) => e.context(format!(
                "the chunks recorded before are in {} (read it with --salvage)",
                kept.display()
            )),
            Err(_) => e,
        }),
        (result, None) => result,
    };
    if let Some(sig) = interrupts.received() {
        let name = crate::interrupt::name(sig);
        match &result {
            Ok(_) => eprintln!(
                "pagelab: interrupted by {name}: the program was stopped; {} holds what it did until then",
                output.display()
            ),
            Err(e) => eprintln!("pagelab: interrupted by {name}: {e:#}"),
        }
        return Ok(128 + sig as u8);
    }
    let summary = result?;
    if !args.quiet {
        eprintln!("pagelab: {summary}");
    }
    if status.success() {
        return Ok(0);
    }
    use std::os::unix::process::ExitStatusExt;
    let (code, how) = match (status.code(), status.signal()) {
        (Some(c), _) => (c as u8, format!("exited with status {c}")),
        (None, Some(s)) => (
            128 + s as u8,
            format!(
                "was killed by {} (exit status {}, as a shell reports it)",
                crate::interrupt::name(s),
                128 + s
            ),
        ),
        _ => (1, status.to_string()),
    };
    eprintln!(
        "pagelab: the recorded program {how}; {} holds what it did until then",
        output.display()
    );
    Ok(code)
}

/// Read the FIFO into the native writer; a one-line summary.
fn record(
    args: &RecordArgs,
    target: &Target,
    fifo: &Fifo,
    child: &mut Child,
    lackey: bool,
    out: impl std::io::Write,
    output: &Path,
) -> Result<String> {
    let file = open_when_written(&fifo.path, child)?;
    // The program runs: start what drives it (a server's load), which ends it.
    let mut driver = match target.driver_command() {
        Some(mut d) => {
            if args.quiet {
                d.stdout(std::process::Stdio::null());
            }
            Some(d.spawn().context("cannot start the workload's driver")?)
        }
        None => None,
    };
    let input = Box::new(BufReader::with_capacity(4 << 20, file));
    let (mut stream, mut filter) = if lackey {
        let filter = LackeyFilter {
            fetches: args.fetches,
            sample: args.sample,
            count: 0,
            last_fetch_page: u64::MAX,
        };
        (
            Stream::Lackey(LackeyReader::from_reader(input, &fifo.path)),
            Some(filter),
        )
    } else {
        // A killed program's stream is cut short: record keeps what came before.
        let r = PgrecReader::from_reader(input, Compression::None, &fifo.path)
            .context("the recorder's stream")?
            .salvage(true);
        let reopen = || Ok(open_unless_ended(&fifo.path, child)?.ok());
        (Stream::Pgrec(Followed::new(r, &fifo.path, reopen)), None)
    };
    let reader = stream.reader();
    let command_line: Vec<String> = target
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut metadata = Metadata {
        source_format: if lackey { "lackey" } else { "pgrec" }.into(),
        workload: args.label.clone().unwrap_or_else(|| target.label.clone()),
        created_by: format!("pagelab {} record", env!("CARGO_PKG_VERSION")),
        extra: reader.metadata().extra.clone(),
    };
    metadata
        .extra
        .insert("command".into(), command_line.join(" "));
    metadata.extra.insert(
        "tool".into(),
        if lackey { "lackey" } else { "pagelab" }.into(),
    );
    if lackey {
        metadata.extra.insert(
            "fetches".into(),
            format!("{:?}", args.fetches).to_lowercase(),
        );
        metadata
            .extra
            .insert("sample".into(), args.sample.to_string());
    }
    let options = WriterOptions {
        level: args.level,
        ..WriterOptions::default()
    };
    let out = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut writer = NativeWriter::new(out, output, &metadata, options)?.flush_each_chunk(true);
    let mut progress = Progress::new("recording", args.quiet).counting_output();
    let mut batch = Batch::default();
    while reader.next_batch(&mut batch)? {
        if let Some(f) = filter.as_mut() {
            f.apply(&mut batch);
        }
        writer.write_batch(&batch).context("recording stopped")?;
        progress.tick(batch.refs.len() as u64, writer.bytes_written());
    }
    let refs = writer.refs_written();
    writer.finish()?;
    if let Some(d) = driver.as_mut() {
        let status = d.wait()?;
        if !status.success() {
            eprintln!(
                "pagelab: warning: the workload's driver ended with {}",
                describe(status)
            );
        }
    }
    let elapsed = progress.finish();
    if let Some(w) = reader.warning() {
        eprintln!("pagelab: warning: {w}");
    }
    let mut through = String::new();
    if let Stream::Pgrec(f) = &stream {
        if let Some(path) = &f.unfollowed {
            let how = if args.no_follow_exec {
                "which ran unrecorded (--no-follow-exec)"
            } else if !args.skip_exec.is_empty() {
                "which ran unrecorded, or Valgrind could not run it (see its messages): it matches --skip-exec, or Valgrind cannot run that program"
            } else {
                "which Valgrind did not run under the recorder (see its messages; a program of another architecture, or a setuid one, cannot be)"
            };
            eprintln!(
                "pagelab: warning: the trace ends where the program replaced itself with {path} (exec), {how}"
            );
        }
        if !f.programs.is_empty() {
            through = format!(", through exec of {}", f.programs.join(", then "));
        }
    }
    Ok(format!(
        "recorded {refs} references into {} in {:.2} s ({:.2} M refs/s){}{through}",
        output.display(),
        elapsed.as_secs_f64(),
        refs as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6,
        if lackey { " with lackey" } else { "" }
    ))
}

/// The stream being recorded: lackey's text, or pagelab's tool through each exec.
enum Stream<'a> {
    Lackey(LackeyReader),
    Pgrec(Followed<'a>),
}

impl<'a> Stream<'a> {
    fn reader(&mut self) -> &mut (dyn TraceReader + 'a) {
        match self {
            Stream::Lackey(r) => r,
            Stream::Pgrec(r) => r,
        }
    }
}
