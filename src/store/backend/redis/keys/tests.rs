use super::*;

#[test]
fn a_prefix_is_matched_literally() {
    assert_eq!(glob_of("fuse:shop:"), "fuse:shop:*");
    assert_eq!(glob_of("fuse:a*b?[c]\\"), "fuse:a\\*b\\?\\[c\\]\\\\*");
}

#[test]
fn the_serving_primaries_are_read_from_cluster_nodes() {
    let nodes = "\
07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected
67ed 127.0.0.1:30002@40002 master - 0 1426238316232 2 connected 5461-10922
292f 127.0.0.1:30003@40003,cache-3 master - 0 1426238318243 3 connected 10923-16383
6ec2 127.0.0.1:30005@40005 master,fail - 1426238316232 1426238316232 5 disconnected
824f :0@0 master,noaddr - 0 0 0 disconnected
e7d1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460
9a11 127.0.0.1:30006@40006 master - 0 0 6 connected
";
    assert_eq!(
        primaries_of(nodes),
        ["127.0.0.1:30002", "127.0.0.1:30003", "127.0.0.1:30001"]
    );
    assert!(primaries_of("garbage\n\n  x y").is_empty());
}
