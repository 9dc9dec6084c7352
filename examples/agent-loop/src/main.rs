//! Runs every scenario of the example agent loop and prints what happened:
//! each model answer, each runtime decision and each event.

use musepi_agent_loop::scenarios::{Scenario, run};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    for scenario in Scenario::ALL {
        println!("== {}", scenario.title());
        let outcome = run(scenario, dir.path()).await?;
        for line in &outcome.log {
            println!("{line}");
        }
        println!(
            "   ({} agent requests, {} summary requests, {} compactions in the file)\n",
            outcome.agent_requests,
            outcome.summary_requests,
            outcome.compactions_in_file()
        );
    }
    Ok(())
}
