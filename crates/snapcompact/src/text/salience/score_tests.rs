use super::*;

#[test]
fn facts_outscore_filler() {
    let fact = "The retry budget must stay at 2500 ms in `src/queue.rs` because CI is slow.";
    assert!(score(fact) > 15, "{}", score(fact));
    assert!(read(fact).fact);
    assert!(score("Let me check that.") < 0);
    assert!(score("Reading the file now to see what it does.") < score(fact));
    assert!(!read("Reading the file now to see what it does.").fact);
}

#[test]
fn something_specific_said_as_a_constraint_a_decision_trouble_or_a_value_is_a_fact() {
    for fact in [
        // A value: two digits are enough, with or without a unit.
        "The worker pool has 24 threads.",
        "Cold start takes 3.5 s on the small instance.",
        // A name or a code, and trouble.
        "The importer aborts with ECONNRESET on large files.",
        "Parsing throws ValueError for an empty header.",
        "The nightly run hangs when Postgres restarts.",
        // A decision about named things, with no path or number.
        "We are replacing Webpack with Vite in the dashboard.",
        // A command to run.
        "Before a release, `make dist VERSION=next` builds the archive.",
        // A constraint on an identifier.
        "Leave max_conn_lifetime alone until the pooler is fixed, it has to stay.",
        // A quoted message and trouble.
        "The page shows \"session expired\" and then fails to reload.",
    ] {
        assert!(read(fact).fact, "{fact}: {:?}", read(fact));
    }
    for not_fact in [
        "Running the tests for step 12.",
        "Let me look at the file again.",
        "That should work now.",
        "The function returns early when the list is empty.",
        "I see the issue now.",
    ] {
        assert!(!read(not_fact).fact, "{not_fact}: {:?}", read(not_fact));
    }
}

#[test]
fn a_decision_said_as_an_outcome_an_agreement_or_a_move_is_a_fact() {
    // Phrasings written for this test, none from the retention bench.
    for fact in [
        "a1b2c3d scheduler: move from cron strings to RRULE",
        "Resolution: the ingest queue now uses at-least-once delivery",
        "The team agreed to freeze the public API of parser_core.",
        "Outcome: rollback to 4.2.1 approved",
        "migration plan: shard by tenant_id",
        "We dropped Jenkins in favour of the hosted runners.",
        "From now on the nightly job runs on arm64 only.",
        "We are standardising on rustls for every client.",
    ] {
        assert!(read(fact).fact, "{fact}: {:?}", read(fact));
    }
    for not_fact in [
        "Let me move on to the next file.",
        "I agree, that looks right.",
        "Moving on.",
    ] {
        assert!(!read(not_fact).fact, "{not_fact}: {:?}", read(not_fact));
    }
}

#[test]
fn commands_in_backticks_are_told_from_code() {
    assert!(is_command("cargo build --release"));
    assert!(is_command("RUST_LOG=debug ./target/app --port 80"));
    assert!(is_command("terraform plan -out tf.plan"));
    assert!(!is_command("new Markdown(text, 1, 1)"));
    assert!(!is_command("color: \"gray\""));
    assert!(!is_command("cargo"));
}

#[test]
fn output_lines_that_read_as_statements_are_told_from_code_and_data() {
    for line in [
        "a1b2c3d parser: switch to a hand-written lexer",
        "warning: the pool size must be at most 32 (found 64)",
        "Peak memory: 812 MB",
        "  parse_all ........ 1290 ms",
        "request_timeout = 30",
        "  hint: run the migrations before starting the server",
        "# resolved: keep the old schema for one more release",
    ] {
        assert!(reads_as_statement(line), "{line}");
    }
    for line in [
        "    let value = reader.get(\"value\")?;",
        "fn parse(&self, input: &str) -> Result<(), Error> {",
        "if (buffer.length > 4096) { flush(); }",
        "}",
        "test store::case_12 ... ok",
        "const limit = 10;",
    ] {
        assert!(!reads_as_statement(line), "{line}");
    }
}

#[test]
fn error_lines_are_recognised() {
    for line in [
        "error[E0308]: mismatched types",
        "thread 'main' panicked at src/lib.rs:3:5",
        "test result: FAILED. 3 passed; 1 failed",
        "Command exited with code 2",
        "src/a.ts(3,1): TS2345 argument mismatch",
        "Traceback (most recent call last):",
        "Segmentation fault (core dumped)",
        "npm ERR! code E404",
        "FATAL: role \"app\" does not exist",
        "process Exit Status: 3",
        "see E0599 above",
        "PANICKED AT 'boom'",
    ] {
        // Every line the full check accepts passes the cheap one first.
        assert!(might_report_failure(line.as_bytes()), "{line}");
        assert!(is_error_line(line), "{line}");
    }
    for line in [
        "test result: ok. 12 passed; 0 failed",
        "Compiling musepi v0.1.0",
        "exit code 0",
        "Found 0 errors.",
        "E123 is not a code",
        "if (error) return null;",
    ] {
        assert!(!is_error_line(line), "{line}");
    }
}

#[test]
fn constraints_are_recognised() {
    assert!(states_constraint("Never edit the vendored folder."));
    assert!(states_constraint("We decided to keep the API."));
    assert!(!states_constraint("Here is the log."));
}
