//! Kind plurals as kubebuilder computes them: github.com/gobuffalo/flect v1.0.3's
//! `Pluralize(strings.ToLower(kind))`, so a project scaffolded by opsdk names its resources as
//! the same project scaffolded by kubebuilder or operator-sdk would. opsdk departs from it only
//! where flect's answer is wrong English (`ENGLISH`) or not a valid resource name.

use super::flect_data::{ACRONYMS, DICTIONARY, SUFFIXES};

/// Word endings whose flect plural is wrong English; opsdk uses the English plural, for the
/// word alone and at the end of a compound kind (`VaultSafe` -> `vaultsafes`).
pub(super) const ENGLISH: &[(&str, &str)] = &[
    ("safe", "safes"),        // flect: saves
    ("cafe", "cafes"),        // flect: caves
    ("video", "videos"),      // flect: videoes
    ("octopus", "octopuses"), // flect: octupuses
];

/// The plural opsdk gives a kind when no `--plural` is passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultPlural {
    pub plural: String,
    /// kubebuilder's plural, when it differs from `plural`.
    pub kubebuilder: Option<String>,
}

/// The resource name opsdk gives a kind by default: kubebuilder's plural
/// (`DatabasePerson` -> `databasepeople`, `Redis` -> `redis`), except for `ENGLISH` endings, and
/// except where flect's answer is not a lowercase name (`DNS` -> `dnsDNSes`, which kubebuilder
/// refuses): there opsdk applies flect's rules to the word as written, not as an acronym (`dns`).
pub fn default_plural(kind: &str) -> DefaultPlural {
    let word = kind.to_lowercase();
    let kubebuilder = kubebuilder_plural(kind);
    let plural = if let Some(english) = english_plural(&word) {
        english
    } else if is_lowercase_name(&kubebuilder) {
        kubebuilder.clone()
    } else {
        pluralize(&word, &word)
    };
    DefaultPlural {
        kubebuilder: (kubebuilder != plural).then_some(kubebuilder),
        plural,
    }
}

/// The plural resource name opsdk gives a kind by default (see [`default_plural`]).
pub fn plural_of(kind: &str) -> String {
    default_plural(kind).plural
}

/// kubebuilder's plural for a kind: flect v1.0.3's `Pluralize(strings.ToLower(kind))`, wrong
/// English and invalid names included.
pub fn kubebuilder_plural(kind: &str) -> String {
    let word = kind.to_lowercase();
    // flect cuts its input into parts at spaces, punctuation and upper-case letters, and
    // pluralizes the last one. A lowercased kind is a single part, which flect upper-cases
    // when it is a known acronym.
    let upper = word.to_uppercase();
    let last = if ACRONYMS.contains(&upper.as_str()) {
        upper
    } else {
        word.clone()
    };
    pluralize(&word, &last)
}

fn english_plural(word: &str) -> Option<String> {
    ENGLISH.iter().find_map(|(singular, plural)| {
        word.strip_suffix(singular)
            .map(|head| format!("{head}{plural}"))
    })
}

fn is_lowercase_name(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// flect's `Ident.Pluralize` for an identifier of one part: `original` is the whole input,
/// `last` its last (here: only) part as flect spells it.
fn pluralize(original: &str, last: &str) -> String {
    if last.is_empty() {
        return String::new();
    }
    // 1. A dictionary word, whole.
    if let Some(word) = DICTIONARY.iter().find(|w| w.singular == original) {
        return word.plural.to_string();
    }
    // 2. A known plural stays as it is. (flect repeats 1 and 2 with `last` lowercased, which
    //    is `original` again for a lowercased kind.)
    if is_known_plural(original) {
        return original.to_string();
    }
    // 3. The first suffix rule that matches `last`, case-sensitively.
    if let Some((stem, plural)) = suffix_rules()
        .find_map(|(suffix, plural)| last.strip_suffix(suffix).map(|stem| (stem, plural)))
    {
        let head = original.strip_suffix(last).unwrap_or(original);
        return format!("{head}{stem}{plural}");
    }
    // 4. Anything ending in -s is taken as plural already; everything else takes -s.
    if original.ends_with('s') {
        original.to_string()
    } else {
        format!("{original}s")
    }
}

/// Plurals flect recognises as such: every dictionary plural and alternative plural, but those
/// of one-way entries.
fn is_known_plural(word: &str) -> bool {
    DICTIONARY
        .iter()
        .filter(|w| !w.one_way)
        .any(|w| w.plural == word || (!w.alternative.is_empty() && w.alternative == word))
}

/// flect's `pluralRules`, in its order of precedence, as `(suffix, replacement)`: the
/// dictionary's words (but exact ones) from last to first, as endings of compound words, then
/// the suffix list from first to last. Each pair is preceded by its plural mapped to itself, so
/// a word already ending in that plural stays as it is (`supermen`, not `supermens`).
fn suffix_rules() -> impl Iterator<Item = (&'static str, &'static str)> {
    DICTIONARY
        .iter()
        .rev()
        .filter(|w| !w.exact)
        .map(|w| (w.singular, w.plural))
        .chain(SUFFIXES.iter().copied())
        .flat_map(|(singular, plural)| [(plural, plural), (singular, plural)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_are_kubebuilders() {
        for (kind, plural) in [
            ("Application", "applications"),
            ("Policy", "policies"),
            ("Gateway", "gateways"),
            ("Ingress", "ingresses"),
            ("Box", "boxes"),
            ("Match", "matches"),
            ("Person", "people"),
            ("DatabasePerson", "databasepeople"),
            ("Child", "children"),
            ("Index", "indices"),
            ("Endpoints", "endpoints"),
            ("Series", "series"),
            ("Leaf", "leaves"),
            ("Potato", "potatoes"),
            ("ConfigMap", "configmaps"),
            ("Y", "ies"),
            // where flect differs from simple English rules
            ("Redis", "redis"),
            ("Postgres", "postgres"),
            ("Self", "selves"),
            ("Thief", "thieves"),
            ("Axis", "axes"),
            ("Appendix", "appendices"),
            ("Datum", "data"),
            ("Corpus", "corpora"),
            ("Genus", "genera"),
            ("Nucleus", "nuclei"),
            ("Syllabus", "syllabi"),
            ("Fez", "fezzes"),
            ("Zero", "zeroes"),
            ("Memcached", "memcacheds"),
            ("Human", "humans"),
            ("Superman", "supermen"),
            ("Ox", "oxen"),
            ("Box", "boxes"),
            ("Status", "statuses"),
            ("Database", "databases"),
            ("Ssh", "sshs"),
            ("Api", "apis"),
        ] {
            assert_eq!(plural_of(kind), plural, "plural of {kind}");
            assert_eq!(
                kubebuilder_plural(kind),
                plural,
                "kubebuilder's plural of {kind}"
            );
            assert_eq!(default_plural(kind).kubebuilder, None, "{kind}");
        }
    }

    #[test]
    fn english_where_flect_is_wrong() {
        for (kind, plural, flect) in [
            ("Safe", "safes", "saves"),
            ("Cafe", "cafes", "caves"),
            ("Video", "videos", "videoes"),
            ("Octopus", "octopuses", "octupuses"),
            ("VaultSafe", "vaultsafes", "vaultsaves"),
            ("StreamVideo", "streamvideos", "streamvideoes"),
        ] {
            assert_eq!(
                kubebuilder_plural(kind),
                flect,
                "kubebuilder's plural of {kind}"
            );
            assert_eq!(
                default_plural(kind),
                DefaultPlural {
                    plural: plural.into(),
                    kubebuilder: Some(flect.into())
                },
                "{kind}"
            );
        }
    }

    #[test]
    fn acronyms_ending_in_s_keep_a_valid_name() {
        for (kind, plural, flect) in [
            ("DNS", "dns", "dnsDNSes"),
            ("Https", "https", "httpsHTTPSes"),
            ("ESS", "esses", "essESSes"),
        ] {
            assert_eq!(
                kubebuilder_plural(kind),
                flect,
                "kubebuilder's plural of {kind}"
            );
            let default = default_plural(kind);
            assert_eq!(default.plural, plural, "{kind}");
            assert_eq!(default.kubebuilder.as_deref(), Some(flect), "{kind}");
        }
    }
}
