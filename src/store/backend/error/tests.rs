use super::*;

#[test]
fn a_store_s_name_has_no_password() {
    assert_eq!(
        public_name("redis://user:secret@cache.internal:6379/2"),
        "redis://cache.internal:6379/2"
    );
    assert_eq!(
        public_name("postgres://127.0.0.1:1/shop?user=admin&password=hunter2"),
        "postgres://127.0.0.1:1/shop?user=admin&password=***"
    );
    assert_eq!(
        public_name("redis://127.0.0.1:6379"),
        "redis://127.0.0.1:6379"
    );
}
