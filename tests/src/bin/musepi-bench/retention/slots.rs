//! The slots of the retention case's fact templates: the words a seeded
//! generator picks from (components, identifiers, paths, values, commands,
//! error codes, exception names, versions) and the filling of a
//! template's `{slot}` placeholders with them.

use crate::rng::Rng;

const COMPONENTS: &[&str] = &[
    "ledger",
    "uploader",
    "scheduler",
    "indexer",
    "gateway",
    "billing worker",
    "search service",
    "auth proxy",
    "thumbnailer",
    "sync daemon",
    "report builder",
    "rate limiter",
    "mailer",
    "exporter",
    "webhook relay",
    "feature flag store",
];
const NOUNS: &[&str] = &[
    "flush", "batch", "retry", "cursor", "shard", "quota", "lease", "tenant", "bucket", "window",
    "epoch", "token", "replica", "offset", "digest", "marker", "spool", "ticket",
];
const FIELDS: &[&str] = &[
    "interval", "limit", "size", "count", "timeout", "budget", "depth", "ttl", "capacity", "factor",
];
const CHOICES: &[(&str, &str)] = &[
    ("SQLite", "Postgres"),
    ("a ring buffer", "an unbounded queue"),
    ("zstd", "gzip"),
    ("tokio's mpsc", "crossbeam channels"),
    ("protobuf", "JSON"),
    ("Redis streams", "Kafka"),
    ("a B-tree index", "a hash index"),
    ("rustls", "OpenSSL"),
    ("server-side rendering", "client-side rendering"),
    ("optimistic locking", "a global mutex"),
    ("pnpm", "yarn"),
    ("argon2", "bcrypt"),
    ("S3 multipart uploads", "single PUT requests"),
    ("cron triggers", "a polling loop"),
];
const PROBLEMS: &[&str] = &[
    "dropping writes under load",
    "leaking file handles",
    "timing out on cold starts",
    "deadlocking during shutdown",
    "duplicating events after a restart",
    "blowing the memory limit",
    "returning stale results",
];
const DIRS: &[&str] = &[
    "src",
    "crates/core/src",
    "packages/web/src/api",
    "services/billing",
    "internal/store",
    "config",
    "lib/sync",
    "app/models",
];
const EXTS: &[&str] = &["rs", "ts", "go", "py", "toml", "yaml", "sql", "json"];
const UNITS: &[&str] = &["MB", "KiB", "requests", "rows", "connections", "GB"];
const THINGS: &[&str] = &["migrations", "load tests", "reindex jobs", "backfills"];
const DEPS: &[&str] = &[
    "serde", "tokio", "react", "django", "libpq", "openssl", "protobuf", "axios",
];
const EXCEPTIONS: &[&str] = &[
    "NullPointerException",
    "KeyError",
    "TypeError",
    "ConcurrentModificationException",
    "ValueError",
    "IllegalStateException",
];
const CODES: &[&str] = &[
    "ECONNRESET",
    "SIGSEGV",
    "EADDRINUSE",
    "SQLITE_BUSY",
    "OOMKilled",
    "ETIMEDOUT",
    "EPIPE",
    "SIGBUS",
];
const TYPES: &[&str] = &[
    "string",
    "number",
    "User",
    "Promise<void>",
    "Record<string, Item>",
    "undefined",
];
const HOSTS: &[&str] = &["db-primary", "cache-2", "queue.internal", "10.0.4.17"];
const PANICS: &[&str] = &[
    "called `Option::unwrap()` on a `None` value",
    "index out of bounds",
    "attempt to subtract with overflow",
    "already borrowed: BorrowMutError",
];
/// Command heads and their argument shapes.
const COMMANDS: &[&str] = &[
    "cargo test -p {crate} --features {feature} -- --test-threads {small}",
    "cargo nextest run -p {crate} --no-fail-fast",
    "npm run test -- --runInBand {path}",
    "pnpm --filter {crate} build",
    "pytest -x -k {ident} tests/test_{ident2}.py",
    "go test ./internal/{crate}/... -run Test{Type3} -count={small}",
    "make -C services/{crate} migrate TARGET={ver}",
    "docker compose run --rm {crate} ./scripts/seed.sh --rows {num}",
    "kubectl -n {crate} rollout restart deployment/{crate}-api",
    "git bisect run ./scripts/check_{ident}.sh",
    "RUST_LOG={crate}=debug cargo run --bin {crate} -- --port {port}",
    "psql $DATABASE_URL -c 'REINDEX TABLE {ident};'",
    "npx prisma migrate deploy --schema {path}",
    "cargo insta test -p {crate} --accept --unreferenced=delete",
    "python -m {crate}.tools.rebuild --since {ver} --batch {small}",
    "bazel test //{crate}/... --test_output=errors --jobs={small}",
];
const CRATES: &[&str] = &[
    "ledger", "uploader", "sched", "indexer", "gateway", "billing", "search", "auth", "sync",
    "mailer",
];
const FEATURES: &[&str] = &["tls", "metrics", "sqlite", "simd", "tracing", "compression"];

/// The values of a fact's slots.
#[derive(Debug, Clone)]
pub(crate) struct Slots {
    comp: &'static str,
    ident: String,
    ident2: String,
    path: String,
    choice: (&'static str, &'static str),
    problem: &'static str,
    num: u64,
    num2: u64,
    small: u64,
    dec: String,
    digit: u64,
    unit: &'static str,
    thing: &'static str,
    dep: &'static str,
    ver: String,
    cmd: String,
    code: &'static str,
    code4: u64,
    http: u64,
    exit: u64,
    line: u64,
    col: u64,
    exception: &'static str,
    panic: &'static str,
    types: (&'static str, &'static str),
    host: &'static str,
    port: u64,
    hash: String,
}

fn ident(rng: &mut Rng) -> String {
    format!("{}_{}", rng.pick(NOUNS), rng.pick(FIELDS))
}

fn path(rng: &mut Rng) -> String {
    format!(
        "{}/{}_{}.{}",
        rng.pick(DIRS),
        rng.pick(NOUNS),
        rng.pick(FIELDS),
        rng.pick(EXTS)
    )
}

fn version(rng: &mut Rng) -> String {
    format!(
        "{}.{}.{}",
        rng.range(0, 4),
        rng.range(1, 40),
        rng.range(0, 20)
    )
}

fn camel(s: &str) -> String {
    s.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

impl Slots {
    /// Fresh values for every slot.
    pub(crate) fn new(rng: &mut Rng) -> Self {
        let mut s = Self {
            comp: *rng.pick(COMPONENTS),
            ident: ident(rng),
            ident2: ident(rng),
            path: path(rng),
            choice: *rng.pick(CHOICES),
            problem: *rng.pick(PROBLEMS),
            num: 0,
            num2: 0,
            small: 0,
            dec: String::new(),
            digit: rng.range(0, 9),
            unit: *rng.pick(UNITS),
            thing: *rng.pick(THINGS),
            dep: *rng.pick(DEPS),
            ver: version(rng),
            cmd: String::new(),
            code: *rng.pick(CODES),
            code4: rng.range(100, 999),
            http: *rng.pick(&[400, 401, 403, 404, 409, 413, 429, 500, 502, 503, 504]),
            exit: *rng.pick(&[1, 2, 101, 124, 127, 137, 139]),
            line: rng.range(3, 2400),
            col: rng.range(1, 80),
            exception: *rng.pick(EXCEPTIONS),
            panic: *rng.pick(PANICS),
            types: (*rng.pick(TYPES), *rng.pick(TYPES)),
            host: *rng.pick(HOSTS),
            port: rng.range(1024, 65_000),
            hash: format!("{:07x}", rng.next_u64() & 0x0fff_ffff),
        };
        s.revalue(rng);
        s.cmd = command(rng, &s);
        s
    }

    /// New values (numbers, the choice, the command's arguments) with the
    /// same component and identifiers: a restatement of the same fact.
    pub(crate) fn revalue(&mut self, rng: &mut Rng) {
        let old = (self.num, self.small, self.choice);
        loop {
            self.num = match rng.range(0, 3) {
                0 => rng.range(100, 999),
                1 => rng.range(1_000, 99_999),
                2 => rng.range(10, 99),
                _ => rng.range(100_000, 9_999_999),
            };
            self.num2 = rng.range(2, 99_999);
            self.small = rng.range(2, 64);
            self.dec = format!("{}.{}", rng.range(0, 40), rng.range(0, 99));
            self.choice = *rng.pick(CHOICES);
            if self.num != old.0 && self.small != old.1 && self.choice != old.2 {
                break;
            }
        }
        if !self.cmd.is_empty() {
            self.cmd = command(rng, self);
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "comp" => self.comp.to_owned(),
            "ident" => self.ident.clone(),
            "ident2" => self.ident2.clone(),
            "path" => self.path.clone(),
            "choice" => self.choice.0.to_owned(),
            "alt" => self.choice.1.to_owned(),
            "problem" => self.problem.to_owned(),
            "num" => self.num.to_string(),
            "num2" => self.num2.to_string(),
            "small" => self.small.to_string(),
            "dec" => self.dec.clone(),
            "digit" => self.digit.to_string(),
            "unit" => self.unit.to_owned(),
            "thing" => self.thing.to_owned(),
            "dep" => self.dep.to_owned(),
            "ver" => self.ver.clone(),
            "cmd" => self.cmd.clone(),
            "code" => self.code.to_owned(),
            "code4" => self.code4.to_string(),
            "http" => self.http.to_string(),
            "exit" => self.exit.to_string(),
            "line" => self.line.to_string(),
            "col" => self.col.to_string(),
            "exception" => self.exception.to_owned(),
            "panic" => self.panic.to_owned(),
            "Type" => self.types.0.to_owned(),
            "Type2" => self.types.1.to_owned(),
            "Type3" => camel(&self.ident),
            "host" => self.host.to_owned(),
            "port" => self.port.to_string(),
            "hash" => self.hash.clone(),
            "errline" => format!(
                "error[E0{}]: mismatched types in {}",
                self.code4, self.ident
            ),
            _ => return None,
        })
    }

    /// `template` with its slots filled.
    pub(crate) fn fill(&self, template: &str) -> String {
        fill(template, &|name| self.get(name))
    }
}

/// A command from [`COMMANDS`], its slots filled.
fn command(rng: &mut Rng, s: &Slots) -> String {
    let template = rng.pick(COMMANDS);
    let krate = rng.pick(CRATES);
    let feature = rng.pick(FEATURES);
    fill(template, &|name| match name {
        "crate" => Some((*krate).to_owned()),
        "feature" => Some((*feature).to_owned()),
        "cmd" | "errline" => None,
        other => s.get(other),
    })
}

fn fill(template: &str, get: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len() + 40);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if let Some((value, close)) = after.find('}').and_then(|close| {
            let name = &after[..close];
            get(name).map(|v| (v, close))
        }) {
            out.push_str(&value);
            rest = &after[close + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
