//! The data of github.com/gobuffalo/flect v1.0.3's pluralizer (`plural_rules.go`,
//! `acronyms.go`), transcribed as tables. Order matters: `super::plural` says how each table
//! is consulted. Keep these tables identical to that flect version; opsdk's own departures
//! live in `super::plural::ENGLISH`, not here.

/// A dictionary entry: a singular, its plural and how flect uses the pair.
pub(super) struct Word {
    pub singular: &'static str,
    pub plural: &'static str,
    /// Another accepted plural: input equal to it is already plural.
    pub alternative: &'static str,
    /// The plural is not recognised as plural input (`medium` -> `media`, but `media` is its
    /// own entry).
    pub one_way: bool,
    /// Matches the whole word only, never the end of a longer word (`ox`, not `box`).
    pub exact: bool,
}

const fn word(singular: &'static str, plural: &'static str) -> Word {
    Word {
        singular,
        plural,
        alternative: "",
        one_way: false,
        exact: false,
    }
}

const fn uncountable(singular: &'static str) -> Word {
    word(singular, singular)
}

impl Word {
    const fn or(self, alternative: &'static str) -> Word {
        Word {
            alternative,
            ..self
        }
    }

    const fn one_way(self) -> Word {
        Word {
            one_way: true,
            ..self
        }
    }

    const fn exact(self) -> Word {
        Word {
            exact: true,
            ..self
        }
    }
}

/// flect's `dictionary`, in its order.
pub(super) const DICTIONARY: &[Word] = &[
    // Same in singular and plural.
    word("aircraft", "aircraft"),
    word("beef", "beef").or("beefs"),
    word("bison", "bison"),
    word("blues", "blues").one_way(),
    word("chassis", "chassis"),
    word("deer", "deer"),
    word("fish", "fish").or("fishes"),
    word("moose", "moose"),
    word("police", "police"),
    word("salmon", "salmon").or("salmons"),
    word("series", "series"),
    word("sheep", "sheep"),
    word("shrimp", "shrimp").or("shrimps"),
    word("species", "species"),
    word("swine", "swine").or("swines"),
    word("trout", "trout").or("trouts"),
    word("tuna", "tuna").or("tunas"),
    word("you", "you"),
    // Plurals in -en, vowel changes and other irregular words.
    word("child", "children"),
    word("ox", "oxen").exact(),
    word("foot", "feet"),
    word("goose", "geese"),
    word("man", "men"),
    word("human", "humans"),
    word("louse", "lice").exact(),
    word("mouse", "mice"),
    word("tooth", "teeth"),
    word("woman", "women"),
    word("die", "dice").exact(),
    word("person", "people"),
    // French -u / -eau words.
    word("adieu", "adieux").or("adieus"),
    word("fabliau", "fabliaux"),
    word("bureau", "bureaus").or("bureaux"),
    // Greek -on -> -a.
    word("criterion", "criteria"),
    word("ganglion", "ganglia").or("ganglions"),
    word("lexicon", "lexica").or("lexicons"),
    word("mitochondrion", "mitochondria").or("mitochondrions"),
    word("noumenon", "noumena"),
    word("phenomenon", "phenomena"),
    word("taxon", "taxa"),
    // Latin -um -> -a, and words that keep -s.
    word("media", "media"),
    word("medium", "media").or("mediums").one_way(),
    word("stadium", "stadiums").or("stadia"),
    word("aquarium", "aquaria").or("aquariums"),
    word("auditorium", "auditoria").or("auditoriums"),
    word("symposium", "symposia").or("symposiums"),
    word("curriculum", "curriculums").or("curricula"),
    word("quota", "quotas"),
    // Latin -us -> -i or -era (and flect's "octupuses").
    word("alumnus", "alumni").or("alumnuses"),
    word("bacillus", "bacilli"),
    word("cactus", "cacti").or("cactuses"),
    word("coccus", "cocci"),
    word("focus", "foci").or("focuses"),
    word("locus", "loci").or("locuses"),
    word("nucleus", "nuclei").or("nucleuses"),
    word("octopus", "octupuses").or("octopi"),
    word("radius", "radii").or("radiuses"),
    word("syllabus", "syllabi"),
    word("corpus", "corpora").or("corpuses"),
    word("genus", "genera"),
    // Latin -a -> -ae.
    word("alumna", "alumnae"),
    word("vertebra", "vertebrae"),
    word("differentia", "differentiae"),
    word("minutia", "minutiae"),
    word("vita", "vitae"),
    word("larva", "larvae"),
    word("postcava", "postcavae"),
    word("praecava", "praecavae"),
    word("uva", "uvae"),
    // Latin -ex / -ix -> -ices.
    word("apex", "apices").or("apexes"),
    word("codex", "codices").or("codexes"),
    word("index", "indices").or("indexes"),
    word("latex", "latices").or("latexes"),
    word("vertex", "vertices").or("vertexes"),
    word("vortex", "vortices").or("vortexes"),
    word("appendix", "appendices").or("appendixes"),
    word("radix", "radices").or("radixes"),
    word("helix", "helices").or("helixes"),
    // Latin -is -> -es.
    word("axis", "axes").exact(),
    word("crisis", "crises"),
    word("ellipsis", "ellipses").one_way(),
    word("genesis", "geneses"),
    word("oasis", "oases"),
    word("thesis", "theses"),
    word("testis", "testes"),
    word("base", "bases"),
    word("basis", "bases").one_way(),
    word("alias", "aliases").exact(),
    word("vedalia", "vedalias"),
    // Words in -se, -che, -z and -o the suffix rules would get wrong.
    word("use", "uses").exact(),
    word("abuse", "abuses"),
    word("cause", "causes"),
    word("clause", "clauses"),
    word("cruse", "cruses"),
    word("excuse", "excuses"),
    word("fuse", "fuses"),
    word("house", "houses"),
    word("misuse", "misuses"),
    word("muse", "muses"),
    word("pause", "pauses"),
    word("ache", "aches"),
    word("topaz", "topazes"),
    word("buffalo", "buffaloes").or("buffalos"),
    word("potato", "potatoes"),
    word("tomato", "tomatoes"),
    // Uncountable.
    uncountable("equipment"),
    uncountable("information"),
    uncountable("jeans"),
    uncountable("money"),
    uncountable("news"),
    uncountable("rice"),
    // -f / -ve words that do not take -ves.
    word("dwarf", "dwarfs").or("dwarves"),
    word("hoof", "hoofs").or("hooves"),
    word("thief", "thieves"),
    word("chive", "chives"),
    word("hive", "hives"),
    word("move", "moves"),
    // Words that do not follow the -y, -um or -a rules.
    word("movie", "movies"),
    word("cookie", "cookies"),
    word("pretorium", "pretoriums"),
    word("agenda", "agendas"),
    word("formula", "formulas").or("formulae"),
    // -oe words and the rest.
    word("shoe", "shoes"),
    word("toe", "toes").exact(),
    word("graffiti", "graffiti"),
    word("ID", "IDs").exact(),
];

/// flect's `singularToPluralSuffixList`, in its order (the first match wins).
pub(super) const SUFFIXES: &[(&str, &str)] = &[
    // -f and -fe become -ves (but -tive stays).
    ("tive", "tives"),
    ("eaf", "eaves"),
    ("oaf", "oaves"),
    ("afe", "aves"),
    ("arf", "arves"),
    ("rfe", "rves"),
    ("rf", "rves"),
    ("lf", "lves"),
    ("fe", "ves"),
    // -y after a consonant becomes -ies.
    ("ay", "ays"),
    ("ey", "eys"),
    ("oy", "oys"),
    ("quy", "quies"),
    ("uy", "uys"),
    ("y", "ies"),
    // French -eau.
    ("eau", "eaux"),
    // Latin -a -> -ae (flect maps all five to -bulae).
    ("bula", "bulae"),
    ("dula", "bulae"),
    ("lula", "bulae"),
    ("nula", "bulae"),
    ("vula", "bulae"),
    // Greek -hedron, Latin -um.
    ("hedron", "hedra"),
    ("ium", "ia"),
    ("seum", "seums"),
    ("eum", "ea"),
    ("oum", "oa"),
    ("stracum", "straca"),
    ("dum", "da"),
    ("elum", "ela"),
    ("ilum", "ila"),
    ("olum", "ola"),
    ("ulum", "ula"),
    ("llum", "lla"),
    ("ylum", "yla"),
    ("imum", "ima"),
    ("ernum", "erna"),
    ("gnum", "gna"),
    ("brum", "bra"),
    ("crum", "cra"),
    ("terum", "tera"),
    ("serum", "sera"),
    ("trum", "tra"),
    ("antum", "anta"),
    ("atum", "ata"),
    ("entum", "enta"),
    ("etum", "eta"),
    ("itum", "ita"),
    ("otum", "ota"),
    ("utum", "uta"),
    ("ctum", "cta"),
    ("ovum", "ova"),
    // Latin -trix, Greek -is.
    ("trix", "trices"),
    ("iasis", "iases"),
    ("mesis", "meses"),
    ("kinesis", "kineses"),
    ("resis", "reses"),
    ("gnosis", "gnoses"),
    ("opsis", "opses"),
    ("ysis", "yses"),
    // Sibilants and -o.
    ("ouse", "ouses"),
    ("lause", "lauses"),
    ("us", "uses"),
    ("ch", "ches"),
    ("io", "ios"),
    ("sh", "shes"),
    ("ss", "sses"),
    ("ez", "ezzes"),
    ("iz", "izzes"),
    ("tz", "tzes"),
    ("zz", "zzes"),
    ("ano", "anos"),
    ("lo", "los"),
    ("to", "tos"),
    ("oo", "oos"),
    ("o", "oes"),
    ("x", "xes"),
    // Abbreviations: only an upper-case (acronym) word can end in "S".
    ("S", "Ses"),
];

/// flect's `baseAcronyms`. A word is an acronym when its upper-case form is listed (so the
/// mixed-case entries never match).
pub(super) const ACRONYMS: &[&str] = &[
    "OK", "UTF8", "HTML", "JSON", "JWT", "ID", "UUID", "SQL", "ACK", "ACL", "ADSL", "AES", "ANSI",
    "API", "ARP", "ATM", "BGP", "BSS", "CCITT", "CHAP", "CIDR", "CIR", "CLI", "CPE", "CPU", "CRC",
    "CRT", "CSMA", "CMOS", "DCE", "DEC", "DES", "DHCP", "DNS", "DRAM", "DSL", "DSLAM", "DTE",
    "DMI", "EHA", "EIA", "EIGRP", "EOF", "ESS", "FCC", "FCS", "FDDI", "FTP", "GBIC", "gbps",
    "GEPOF", "HDLC", "HTTP", "HTTPS", "IANA", "ICMP", "IDF", "IDS", "IEEE", "IETF", "IMAP", "IP",
    "IPS", "ISDN", "ISP", "kbps", "LACP", "LAN", "LAPB", "LAPF", "LLC", "MAC", "Mbps", "MC", "MDF",
    "MIB", "MoCA", "MPLS", "MTU", "NAC", "NAT", "NBMA", "NIC", "NRZ", "NRZI", "NVRAM", "OSI",
    "OSPF", "OUI", "PAP", "PAT", "PC", "PIM", "PCM", "PDU", "POP3", "POTS", "PPP", "PPTP", "PTT",
    "PVST", "RAM", "RARP", "RFC", "RIP", "RLL", "ROM", "RSTP", "RTP", "RCP", "SDLC", "SFD", "SFP",
    "SLARP", "SLIP", "SMTP", "SNA", "SNAP", "SNMP", "SOF", "SRAM", "SSH", "SSID", "STP", "SYN",
    "TDM", "TFTP", "TIA", "TOFU", "UDP", "URL", "URI", "USB", "UTP", "VC", "VLAN", "VLSM", "VPN",
    "W3C", "WAN", "WEP", "WiFi", "WPA", "WWW",
];
