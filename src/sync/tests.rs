use super::Words4;

/// Readers racing a writer see only whole writes: every word of one
/// reading comes from the same write (each write's words are `n`,
/// `n + 1`, `n + 2`, `n + 3`).
#[test]
fn readers_never_see_words_of_two_writes() {
    let cell = Words4::default();
    let writes = 200_000u64;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for n in 1..=writes {
                let base = n * 4;
                cell.write([base, base + 1, base + 2, base + 3]);
            }
        });
        for _ in 0..2 {
            scope.spawn(|| {
                let mut seen = 0u64;
                let mut whole = 0u64;
                while seen < writes * 4 {
                    let Some(words) = cell.read() else { continue };
                    if words == [0; 4] {
                        // Before the first write.
                        continue;
                    }
                    let base = words[0];
                    assert_eq!(words, [base, base + 1, base + 2, base + 3], "a torn read");
                    assert!(base >= seen, "readings never go back");
                    seen = base;
                    whole += 1;
                }
                assert!(whole > 0);
            });
        }
    });
}
