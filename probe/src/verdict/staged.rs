//! Whether a declared `staged_files: resource_links` is served: the probe staged read-only
//! files in the workspace, each carrying a nonce of its own, and linked them in the prompt
//! with one ACP `resource_link` each, in order.
//!
//! A harness that reads the links passes their contents on to the model; the relay records,
//! per call, which nonces its request carried and in which order. The files are the
//! platform's, not the harness's: each must be as staged once the turn is over.

/// Why a declared staged-files surface failed, naming the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StagedMiss {
    #[error("the model was never asked: the relay served no call in the staged-files turn")]
    Unasked,
    #[error("no staged file's nonce reached the model: none of the {count} resource links was read into a model request")]
    NoneReached { count: usize },
    #[error("staged file {index} (`{name}`) never reached the model: no request carried its nonce")]
    Missing { index: usize, name: String },
    #[error("the staged files reached the model out of link order: the request carried them as {order}")]
    OutOfOrder { order: String },
    #[error("staged file {index} (`{name}`) was changed after it was staged: {how}")]
    Changed { index: usize, name: String, how: String },
}

/// One staged file after the turn: its name, and what became of it (`None`: unchanged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfterTurn {
    pub name: String,
    pub change: Option<String>,
}

/// Judges the staged-files turn: `orders` the watched nonces each call of the turn carried
/// (indices into the staged files, in the order the request held them); `files` the staged
/// files, in link order, as found after the turn. A changed file fails first (the harness
/// wrote where it was only to read); then a call must carry every nonce, in link order.
pub fn judge(orders: &[Vec<usize>], files: &[AfterTurn]) -> Result<(), StagedMiss> {
    for (at, file) in files.iter().enumerate() {
        if let Some(how) = &file.change {
            return Err(StagedMiss::Changed { index: at + 1, name: file.name.clone(), how: how.clone() });
        }
    }
    if orders.is_empty() {
        return Err(StagedMiss::Unasked);
    }
    let linked: Vec<usize> = (0..files.len()).collect();
    if orders.contains(&linked) {
        return Ok(());
    }
    // The most complete request names what is missing, or how it was ordered.
    let Some(best) = orders.iter().max_by_key(|order| order.len()).filter(|order| !order.is_empty()) else {
        return Err(StagedMiss::NoneReached { count: files.len() });
    };
    if let Some(missing) = linked.iter().find(|index| !best.contains(index)) {
        let name = files.get(*missing).map(|f| f.name.clone()).unwrap_or_default();
        return Err(StagedMiss::Missing { index: missing + 1, name });
    }
    let order: Vec<String> = best.iter().map(|index| (index + 1).to_string()).collect();
    Err(StagedMiss::OutOfOrder { order: order.join(", ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<AfterTurn> {
        (1..=3).map(|n| AfterTurn { name: format!("staged-{n}.txt"), change: None }).collect()
    }

    #[test]
    fn every_nonce_in_link_order_in_one_request_passes() {
        assert_eq!(judge(&[vec![], vec![0, 1, 2]], &files()), Ok(()));
    }

    #[test]
    fn no_nonce_at_all_fails() {
        assert_eq!(judge(&[vec![], vec![]], &files()), Err(StagedMiss::NoneReached { count: 3 }));
        assert_eq!(judge(&[], &files()), Err(StagedMiss::Unasked));
    }

    #[test]
    fn a_missing_or_misordered_file_fails_naming_it() {
        let miss = judge(&[vec![0, 2]], &files()).unwrap_err();
        assert_eq!(miss, StagedMiss::Missing { index: 2, name: String::from("staged-2.txt") });
        let miss = judge(&[vec![2, 0, 1]], &files()).unwrap_err();
        assert_eq!(miss.to_string(), "the staged files reached the model out of link order: the request carried them as 3, 1, 2");
    }

    #[test]
    fn a_changed_file_fails_even_when_the_nonces_arrived() {
        let mut after = files();
        after[1].change = Some(String::from("it was removed"));
        let miss = judge(&[vec![0, 1, 2]], &after).unwrap_err();
        assert!(miss.to_string().starts_with("staged file 2 (`staged-2.txt`) was changed"), "{miss}");
    }
}
