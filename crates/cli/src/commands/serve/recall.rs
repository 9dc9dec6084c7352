//! `musepi serve`'s `recall` method: what `musepi recall --json` prints,
//! from the open session and the prune store beside its file
//! (docs/protocol.md, "recall").

use musepi_runtime::context::Search;
use serde_json::Value;

use super::methods::{Reply, RpcError, Server};
use crate::report::recall::{Originals, PAGE_BYTES, PAGE_MATCHES, entry_page, search_page};
use musepi_protocol::serve::RecallParams;

/// `offset` or `limit` as a count.
fn count(n: Option<u64>, key: &str) -> Result<Option<usize>, RpcError> {
    n.map(|n| usize::try_from(n).map_err(|_| RpcError::params(format!("`{key}` is too large"))))
        .transpose()
}

impl Server {
    /// `recall`: `{"entry": ID}` pages an entry's original content,
    /// `{"grep": TEXT}` searches what compactions and pruning took out of
    /// the context at `leaf`; `offset` and `limit` page both.
    pub(super) fn recall(&mut self, params: &Value) -> Reply {
        let p: RecallParams = super::methods::params(params)?;
        let offset = count(p.offset, "offset")?.unwrap_or(0);
        let limit = count(p.limit, "limit")?;
        let leaf = self.leaf(p.leaf.as_deref())?;
        let (entry, grep) = (p.entry, p.grep);
        let runtime = self.runtime()?;
        let journal = runtime.journal();
        let session = journal.session();
        let mut originals = Originals::open(Some(journal.path()), session);
        let doc = match (entry, grep) {
            (Some(id), None) => {
                let index = session
                    .index_of(&id)
                    .ok_or_else(|| RpcError::new("not_found", format!("Entry {id} not found")))?;
                let page = entry_page(
                    session,
                    leaf,
                    index,
                    &mut originals,
                    offset,
                    limit.unwrap_or(PAGE_BYTES),
                );
                if page.pruned && !page.original {
                    let why = page.warnings.first().map_or(
                        "it is not in the prune store beside the session",
                        String::as_str,
                    );
                    return Err(RpcError::new(
                        "no_original",
                        format!("entry {id} was pruned and its original cannot be read: {why}"),
                    ));
                }
                serde_json::to_value(&page)
            }
            (None, Some(text)) => {
                let search = Search::new(&text).ok_or_else(|| {
                    RpcError::params("`grep` is empty: give a text to search for")
                })?;
                let page = search_page(
                    session,
                    leaf,
                    &search,
                    &text,
                    &mut originals,
                    offset,
                    limit.unwrap_or(PAGE_MATCHES),
                );
                serde_json::to_value(&page)
            }
            _ => {
                return Err(RpcError::params(
                    "give one of `entry` (an entry id) and `grep` (a text to search for)",
                ));
            }
        };
        doc.map_err(|e| RpcError::new("failed", e.to_string()))
    }
}
