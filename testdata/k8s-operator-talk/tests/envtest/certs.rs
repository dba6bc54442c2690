//! Throw-away PKI for one control plane. All keys are ECDSA P-256 (rcgen on
//! `ring` cannot generate RSA keys); every key is PKCS#8 PEM ("PRIVATE KEY"),
//! which both Go (apiserver) and rustls (kube client) accept.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// PEM-encoded material for the apiserver and its admin client.
pub struct Pki {
    pub ca_cert: String,
    pub serving_cert: String,
    pub serving_key: String,
    pub admin_cert: String,
    pub admin_key: String,
    /// Service-account token signing key and its public half.
    pub sa_key: String,
    pub sa_pub: String,
}

pub fn generate() -> Result<Pki, rcgen::Error> {
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "envtest-ca");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;

    // The client connects to https://127.0.0.1, so the IP SAN is the one that counts.
    let (serving_cert, serving_key) = leaf(
        &ca,
        &["127.0.0.1", "localhost"],
        &[(DnType::CommonName, "kube-apiserver")],
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    // The apiserver maps a client cert's CN to the user name and O to groups;
    // system:masters bypasses RBAC.
    let (admin_cert, admin_key) = leaf(
        &ca,
        &[],
        &[
            (DnType::CommonName, "envtest-admin"),
            (DnType::OrganizationName, "system:masters"),
        ],
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;

    let sa = KeyPair::generate()?;
    Ok(Pki {
        ca_cert: ca.pem(),
        serving_cert,
        serving_key,
        admin_cert,
        admin_key,
        sa_key: sa.serialize_pem(),
        sa_pub: sa.public_key_pem(),
    })
}

/// Returns (certificate PEM, private key PEM) of a fresh key signed by `ca`.
fn leaf(
    ca: &Issuer<'_, KeyPair>,
    sans: &[&str],
    subject: &[(DnType, &str)],
    usage: ExtendedKeyUsagePurpose,
) -> Result<(String, String), rcgen::Error> {
    let mut params =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    for (ty, value) in subject {
        params.distinguished_name.push(ty.clone(), *value);
    }
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate()?;
    Ok((params.signed_by(&key, ca)?.pem(), key.serialize_pem()))
}
