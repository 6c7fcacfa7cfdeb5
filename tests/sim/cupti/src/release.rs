//! Which CUPTI release the sim impersonates (`SIMCUPTI_VERSION`), and the API rules
//! that differ between releases, each taken from that release's headers.

use std::sync::OnceLock;

use cupti_sys::records::{Release, RELEASES};

/// The environment variable choosing the release.
pub const ENV: &str = "SIMCUPTI_VERSION";
/// The release impersonated when `SIMCUPTI_VERSION` is unset or unknown.
pub const DEFAULT: &str = "13.4";

/// The impersonated release with the facts the API needs.
#[derive(Debug, Clone, Copy)]
pub struct Rel {
    pub release: &'static Release,
    pub major: u32,
    pub minor: u32,
}

impl Rel {
    /// `major.minor` at least `(major, minor)`.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
    /// `cuptiSubscribe_v2` exists (CUDA 13.0 headers on).
    pub fn has_subscribe_v2(&self) -> bool {
        self.at_least(13, 0)
    }
    /// `CUpti_SubscriberParams::allowMultipleSubscribers` exists (13.2 headers on).
    pub fn has_multiple_subscribers(&self) -> bool {
        self.at_least(13, 2)
    }
    /// `cuptiActivityGetStructSize` and the activity `_v2` functions taking a subscriber
    /// (`cuptiActivityEnable_v2`, `..RegisterCallbacks_v2`, `..Get/SetAttribute_v2`)
    /// exist (13.2 headers on).
    pub fn has_activity_v2(&self) -> bool {
        self.at_least(13, 2)
    }
    /// `cuptiActivityGetNextRecord_v2`, `cuptiActivityGetNumDroppedRecords_v2`,
    /// `cuptiGetTimestamp_v2` exist (13.3 headers on).
    pub fn has_activity_v2_more(&self) -> bool {
        self.at_least(13, 3)
    }
    /// The largest `CUpti_ActivityAttribute` of the release's enum.
    pub fn max_attribute(&self) -> u32 {
        if self.at_least(13, 5) {
            24
        } else if self.at_least(13, 2) {
            23
        } else {
            8
        }
    }
    /// 13.x documents `CUpti_ActivityDevice*::name` as owned by the client ("Client is
    /// responsible for freeing this memory using the free function"); 12.x does not.
    pub fn device_name_client_owned(&self) -> bool {
        self.major >= 13
    }
}

/// Picks the release named `value` (a `RELEASES` name); `None` or an unknown name
/// gives [`DEFAULT`], with the warning line to print for an unknown one.
pub fn choose(value: Option<&str>) -> (Rel, Option<String>) {
    let find = |name: &str| RELEASES.iter().find(|r| r.name == name);
    let (release, warning) = match value {
        None => (find(DEFAULT), None),
        Some(v) => match find(v) {
            Some(r) => (Some(r), None),
            None => (
                find(DEFAULT),
                Some(format!(
                    "simcupti: {ENV}={v} is not a release with layouts, using {DEFAULT}"
                )),
            ),
        },
    };
    let release = release.expect("the default release has layouts");
    let (major, minor) = release
        .name
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .expect("release names are major.minor");
    (
        Rel {
            release,
            major,
            minor,
        },
        warning,
    )
}

/// The impersonated release, read from the environment once per process.
pub fn current() -> &'static Rel {
    static CURRENT: OnceLock<Rel> = OnceLock::new();
    CURRENT.get_or_init(|| {
        let value = std::env::var(ENV).ok();
        let (rel, warning) = choose(value.as_deref());
        if let Some(w) = warning {
            eprintln!("{w}");
        }
        rel
    })
}
