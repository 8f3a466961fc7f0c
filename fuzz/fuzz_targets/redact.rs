#![cfg_attr(fuzzing, no_main)]
#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| dotty_pi_ext_fuzz::redact::check(data));
#[cfg(not(fuzzing))]
fn main() {
    dotty_pi_ext_fuzz::replay_args(dotty_pi_ext_fuzz::redact::check)
}
