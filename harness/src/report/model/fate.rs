//! What became of one attempt: the one vocabulary for an attempt's end. The sender decides it;
//! the history writes it (as an attempt line's `status`, `outcome` and `detail`) and merge reads it
//! back from there; the counters, the figures and the progress lines count by it.

use std::fmt;
use std::str::FromStr;

use super::witnesses::Outcome;

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fate {
    /// The receiver answered with this status, and the sender heard it.
    Answered(u16),
    /// The receiver answered with this 2xx and hookbench dropped the answer on purpose (the
    /// workload's lost ack: the receiver committed, the provider never heard), so the event is
    /// sent again. The receiver did answer: it is a 2xx and has an answer's time.
    AckLost(u16),
    /// No answer came within the sender's timeout.
    TimedOut,
    /// No connection could be made: nothing was listening at the worker's address.
    NoConnection,
    /// The connection was made and broke before a whole answer came (reset or closed by the
    /// receiver, or bytes that were not an HTTP/1.1 response).
    Reset,
}

/// An attempt's `detail` in the history for each fate that is not plainly an answer.
const ACK_LOST: &str = "ack lost";
const TIMEOUT: &str = "timeout";
const NO_CONNECTION: &str = "no-connection";
const RESET: &str = "reset";

impl Fate {
    /// The status the receiver answered with, if it answered.
    pub fn status(self) -> Option<u16> {
        match self {
            Self::Answered(s) | Self::AckLost(s) => Some(s),
            Self::TimedOut | Self::NoConnection | Self::Reset => None,
        }
    }

    /// Whether the receiver answered (whatever the sender then did with the answer): only these
    /// have an answer's time.
    pub fn answered(self) -> bool {
        self.status().is_some()
    }

    /// Whether the receiver answered 2xx: it says it stored the event.
    pub fn stored(self) -> bool {
        self.status().is_some_and(|s| (200..300).contains(&s))
    }

    /// Ok, fail or info, in Jepsen's terms: a 2xx the sender heard is ok, a 4xx or 5xx is fail,
    /// and everything the sender cannot know the effect of (no answer, a lost ack) is info.
    pub fn outcome(self) -> Outcome {
        match self {
            Self::Answered(s) if (200..300).contains(&s) => Outcome::Ok,
            Self::Answered(_) => Outcome::Fail,
            Self::AckLost(_) | Self::TimedOut | Self::NoConnection | Self::Reset => Outcome::Info,
        }
    }

    /// Why an attempt is not plainly an answer, as the history's `detail` says it.
    pub fn detail(self) -> Option<&'static str> {
        match self {
            Self::Answered(_) => None,
            Self::AckLost(_) => Some(ACK_LOST),
            Self::TimedOut => Some(TIMEOUT),
            Self::NoConnection => Some(NO_CONNECTION),
            Self::Reset => Some(RESET),
        }
    }

    /// The fate an attempt line's `status` and `detail` record. A line with neither timed out
    /// (the history's first lines wrote no detail for a timeout), and histories written before
    /// resets were told apart say `no-connection` for both.
    pub fn of_line(status: Option<u16>, detail: Option<&str>) -> Self {
        match (status, detail) {
            (Some(s), Some(ACK_LOST)) => Self::AckLost(s),
            (Some(s), _) => Self::Answered(s),
            (None, Some(NO_CONNECTION)) => Self::NoConnection,
            (None, Some(RESET)) => Self::Reset,
            (None, _) => Self::TimedOut,
        }
    }
}

/// The fate in a word or two, as timelines print it and a shard's partial keeps it: the status,
/// `200 ack lost`, `timeout`, `no-connection` or `reset`.
impl fmt::Display for Fate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status(), self.detail()) {
            (Some(s), Some(d)) => write!(f, "{s} {d}"),
            (Some(s), None) => write!(f, "{s}"),
            (None, d) => f.write_str(d.unwrap_or(TIMEOUT)),
        }
    }
}

/// A word that is no fate.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is no attempt's fate (a status, `<status> ack lost`, timeout, no-connection, reset)")]
pub struct NotAFate(String);

impl FromStr for Fate {
    type Err = NotAFate;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (status, detail) = match s.split_once(' ') {
            Some((status, detail)) => (Some(status), Some(detail)),
            None if s.starts_with(|c: char| c.is_ascii_digit()) => (Some(s), None),
            None => (None, Some(s)),
        };
        let status = status.map(str::parse::<u16>).transpose().map_err(|_| NotAFate(s.to_string()))?;
        let fate = Self::of_line(status, detail);
        if fate.to_string() == s { Ok(fate) } else { Err(NotAFate(s.to_string())) }
    }
}

impl serde::Serialize for Fate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Fate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: [Fate; 7] = [
        Fate::Answered(200),
        Fate::Answered(409),
        Fate::Answered(503),
        Fate::AckLost(204),
        Fate::TimedOut,
        Fate::NoConnection,
        Fate::Reset,
    ];

    #[test]
    fn every_fate_reads_back_from_its_history_line_and_from_its_word() {
        for f in EVERY {
            assert_eq!(Fate::of_line(f.status(), f.detail()), f, "{f:?}");
            assert_eq!(f.to_string().parse::<Fate>(), Ok(f), "{f}");
            let json = serde_json::to_string(&f).expect("serializes");
            assert_eq!(serde_json::from_str::<Fate>(&json).expect("reads"), f, "{json}");
        }
    }

    #[test]
    fn only_answers_have_a_status_and_only_a_heard_2xx_is_ok() {
        let ok: Vec<Fate> = EVERY.into_iter().filter(|f| f.outcome() == Outcome::Ok).collect();
        assert_eq!(ok, [Fate::Answered(200)]);
        let answered: Vec<Fate> = EVERY.into_iter().filter(|f| f.answered()).collect();
        assert_eq!(
            answered,
            [Fate::Answered(200), Fate::Answered(409), Fate::Answered(503), Fate::AckLost(204)]
        );
        let stored: Vec<Fate> = EVERY.into_iter().filter(|f| f.stored()).collect();
        assert_eq!(stored, [Fate::Answered(200), Fate::AckLost(204)]);
    }

    #[test]
    fn older_histories_lines_read_as_they_meant() {
        // A timeout once wrote no detail; a reset once wrote `no-connection`.
        assert_eq!(Fate::of_line(None, None), Fate::TimedOut);
        assert_eq!(Fate::of_line(None, Some("no-connection")), Fate::NoConnection);
        assert_eq!(Fate::of_line(Some(200), None), Fate::Answered(200));
    }

    #[test]
    fn a_word_that_is_no_fate_is_refused_by_name() {
        for word in ["", "ok", "2OO", "200 late", "timeout 200", "70000", "reset "] {
            let e = word.parse::<Fate>().expect_err(word);
            assert!(e.to_string().contains(&format!("`{word}`")), "{e}");
        }
    }
}
