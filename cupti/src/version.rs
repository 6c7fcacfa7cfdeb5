//! CUPTI API versions and the record layouts that go with them.
//!
//! `cuptiGetVersion` answers `CUPTI_API_VERSION` of the library: a small counter in
//! CUDA 12 (22 for 12.4, 24 for 12.6, 26 for 12.8, 28 for 12.9) and `MMmmpp` from
//! CUDA 13 on (130401 for 13.4). Record layouts change between minor releases, so a
//! version maps to layouts only where we have that release's headers: CUDA 12 by
//! exact API number, CUDA 13+ by major.minor (patch releases keep layouts). Anything
//! else is unknown and tracing stays off; a layout is never guessed.

use cupti_sys::records::{Release, RELEASES};

/// A value returned by `cuptiGetVersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion(pub u32);

impl ApiVersion {
    /// (major, minor) of the CUDA release, where the number says it.
    pub fn major_minor(self) -> Option<(u32, u32)> {
        if self.0 >= 100_000 {
            Some((self.0 / 10_000, (self.0 / 100) % 100))
        } else {
            RELEASES
                .iter()
                .find(|r| r.api_version == canonical(self.0))
                .and_then(|r| parse_name(r.name))
        }
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&release_name_of(*self))
    }
}

fn parse_name(name: &str) -> Option<(u32, u32)> {
    let (a, b) = name.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// CUDA 12 API numbers that share another number's headers: `cupti_version.h`
/// gives 27 to CUDA 12.9 and 28 to 12.9 Update 1, whose headers are identical
/// (the 12.9.19 and 12.9.79 wheels; `tests/tests/it/cupti/nvidia_libraries.rs`
/// compares them and asks the real 12.9.19 library).
const SAME_HEADERS: &[(u32, u32)] = &[(27, 28)];

fn canonical(api: u32) -> u32 {
    SAME_HEADERS
        .iter()
        .find(|(alias, _)| *alias == api)
        .map_or(api, |(_, to)| *to)
}

/// The release whose record layouts apply to a library answering `api`, if any.
pub fn release_for_api_version(api: ApiVersion) -> Option<&'static Release> {
    if api.0 >= 100_000 {
        let mm = api.major_minor()?;
        RELEASES
            .iter()
            .find(|r| r.api_version >= 100_000 && parse_name(r.name) == Some(mm))
    } else {
        RELEASES.iter().find(|r| r.api_version == canonical(api.0))
    }
}

/// Human-readable form: "13.4.1 (API 130401)", "12.9 (API 28)", "API 23" when unknown.
pub fn release_name_of(api: ApiVersion) -> String {
    if api.0 >= 100_000 {
        format!(
            "{}.{}.{} (API {})",
            api.0 / 10_000,
            (api.0 / 100) % 100,
            api.0 % 100,
            api.0
        )
    } else {
        match RELEASES.iter().find(|r| r.api_version == canonical(api.0)) {
            Some(r) => format!("{} (API {})", r.name, api.0),
            None => format!("API {}", api.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_12_9_ga_uses_the_12_9_layouts() {
        assert_eq!(
            release_for_api_version(ApiVersion(27)).map(|r| r.name),
            Some("12.9")
        );
        assert_eq!(ApiVersion(27).major_minor(), Some((12, 9)));
        assert_eq!(release_name_of(ApiVersion(27)), "12.9 (API 27)");
        assert_eq!(release_for_api_version(ApiVersion(25)), None);
    }

    #[test]
    fn cuda12_maps_by_exact_api_number() {
        assert_eq!(
            release_for_api_version(ApiVersion(28)).map(|r| r.name),
            Some("12.9")
        );
        assert_eq!(
            release_for_api_version(ApiVersion(22)).map(|r| r.name),
            Some("12.4")
        );
        // 12.5 (API 23) has no headers pinned: unknown, never the neighbour's layout.
        assert_eq!(release_for_api_version(ApiVersion(23)), None);
        assert_eq!(release_for_api_version(ApiVersion(29)), None);
    }

    #[test]
    fn cuda13_maps_by_major_minor() {
        assert_eq!(
            release_for_api_version(ApiVersion(130001)).map(|r| r.name),
            Some("13.0")
        );
        assert_eq!(
            release_for_api_version(ApiVersion(130000)).map(|r| r.name),
            Some("13.0")
        );
        assert_eq!(
            release_for_api_version(ApiVersion(130202)).map(|r| r.name),
            Some("13.2")
        );
        assert_eq!(
            release_for_api_version(ApiVersion(130499)).map(|r| r.name),
            Some("13.4")
        );
        assert_eq!(release_for_api_version(ApiVersion(139900)), None);
        assert_eq!(release_for_api_version(ApiVersion(140000)), None);
    }

    #[test]
    fn names() {
        assert_eq!(release_name_of(ApiVersion(130401)), "13.4.1 (API 130401)");
        assert_eq!(release_name_of(ApiVersion(28)), "12.9 (API 28)");
        assert_eq!(release_name_of(ApiVersion(23)), "API 23");
        assert_eq!(ApiVersion(26).major_minor(), Some((12, 8)));
    }
}
