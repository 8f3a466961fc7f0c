fn main() {
    // Only the Node build links against N-API; the core's `cargo test` builds without it.
    if std::env::var_os("CARGO_FEATURE_NODE").is_some() {
        napi_build::setup();
    }
}
