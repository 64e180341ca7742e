//! The SQL store's [`Increment`](crate::store::Increment): one `UPDATE`
//! whose new payload is computed from the row as the database holds it
//! when the statement runs (under the row's lock on PostgreSQL, which
//! computes `SET` again from the row another writer left if it had to
//! wait; under the write lock on SQLite), so increments commute with each
//! other. It is the rule of [`Increment::apply`](crate::store::Increment::apply)
//! in SQL: the same payloads apply (a text check of the shape first, in a
//! `CASE` so that nothing is parsed before it holds), and the same text is
//! written; what follows the buckets (`}}}`, or the window's reporters:
//! [`Increment::REPORTERS`](crate::store::Increment::REPORTERS), digits,
//! commas and brackets, `]}}`) is kept as it is. Parameters: the key, the
//! prefix, the width in microseconds, the window's buckets, the calls, the
//! time-to-live in microseconds.

use super::table::Table;
use crate::store::Increment;
use crate::store::payload::PayloadError;

/// A number of an entry: at most 15 digits, no leading zero.
const NUMBER: &str = "(0|[1-9][0-9]{0,14})";

/// What may follow the buckets besides `}}}` (PostgreSQL's regular
/// expression): the window's reporters.
const REPORTERS: &str = r#"^\},"reporters":\[(\[|\]|[0-9]|,)*\]\}\}$"#;

/// The statement on PostgreSQL (`now`: the server's time in microseconds).
pub(super) fn postgres(table: &Table, now: &str) -> String {
    let max = Increment::MAX;
    let bytes = PayloadError::MAX_BYTES;
    let entry = format!("\\[{NUMBER},{NUMBER},{NUMBER},{NUMBER}\\]");
    let shape = format!("^\\[({entry}(,{entry})*)?\\]$");
    let text = "t.payload::text";
    // The buckets run from the prefix to the first `}`; the tail follows.
    let rest = format!("substr({text}, char_length($2) + 1)");
    let cut = format!("strpos({rest}, '}}')");
    let body = format!("left({rest}, {cut} - 1)");
    let tail = format!("substr({rest}, {cut})");
    let entries = format!(
        "SELECT (x->>0)::bigint AS b, (x->>1)::bigint AS c, (x->>2)::bigint AS f, \
         (x->>3)::bigint AS s FROM json_array_elements(({body})::json) AS x"
    );
    let bucket = "(k.now / $3::bigint)";
    let current =
        format!("GREATEST({bucket}, (SELECT coalesce(max(m.b), 0) FROM ({entries}) AS m))");
    let grouped = format!(
        "SELECT g.b, sum(g.c) AS c, sum(g.f) AS f, sum(g.s) AS s FROM (\
         SELECT e.b, e.c, e.f, e.s FROM ({entries}) AS e \
         WHERE e.b <= {current} AND {current} - e.b < $4::bigint \
         UNION ALL SELECT {bucket}, $5::bigint, 0, 0 WHERE {current} - {bucket} < $4::bigint) \
         AS g GROUP BY g.b"
    );
    format!(
        "UPDATE {table} AS t SET payload = ($2::text || '[' || coalesce((\
         SELECT string_agg(format('[%s,%s,%s,%s]', r.b, r.c, r.f, r.s), ',' ORDER BY r.b) \
         FROM ({grouped}) AS r), '') || ']' || {tail})::json, \
         expires_at = (k.now + $6::bigint + 999999) / 1000000 \
         FROM (SELECT {now} AS now) AS k \
         WHERE t.key = $1 AND (t.expires_at IS NULL OR t.expires_at > k.now / 1000000) \
         AND CASE WHEN octet_length({text}) <= {bytes} \
         AND char_length({text}) >= char_length($2) + 5 \
         AND left({text}, char_length($2)) = $2 AND {cut} > 0 \
         AND ({tail} = '}}}}}}' OR {tail} ~ '{REPORTERS}') \
         AND {body} ~ '{shape}' AND {bucket} <= {max} \
         THEN NOT EXISTS (SELECT 1 FROM ({grouped}) AS r \
         WHERE r.c > {max} OR r.f > {max} OR r.s > {max}) ELSE false END"
    )
}

/// The statement on SQLite (`now`: the database's time in microseconds,
/// the same for every use within the statement).
pub(super) fn sqlite(table: &Table, now: &str) -> String {
    let max = Increment::MAX;
    let bytes = PayloadError::MAX_BYTES;
    // The buckets run from the prefix to the first `}`; the tail follows.
    let rest = "substr(payload, length(?2) + 1)";
    let cut = format!("instr({rest}, '}}')");
    let body = format!("substr({rest}, 1, {cut} - 1)");
    let tail = format!("substr({rest}, {cut})");
    // The reporters: `Increment::REPORTERS`, then no character but digits,
    // commas and brackets, then `]}}`.
    let named = format!(
        "(length({tail}) >= 18 AND substr({tail}, 1, 15) = '}},\"reporters\":[' \
         AND substr({tail}, -3) = ']}}}}' \
         AND NOT substr({tail}, 16, length({tail}) - 18) GLOB '*[^]0-9,[]*')"
    );
    let entries = format!(
        "SELECT json_extract(x.value, '$[0]') AS b, json_extract(x.value, '$[1]') AS c, \
         json_extract(x.value, '$[2]') AS f, json_extract(x.value, '$[3]') AS s \
         FROM json_each({body}) AS x"
    );
    // Each entry an array of four integers from 0 to the bound.
    let bad = (0..4)
        .map(|at| {
            format!(
                "json_type(x.value, '$[{at}]') IS NOT 'integer' \
                 OR json_extract(x.value, '$[{at}]') NOT BETWEEN 0 AND {max}"
            )
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    let shape = format!(
        "json_valid({body}) AND json_type({body}) = 'array' \
         AND instr({body}, ' ') = 0 AND instr({body}, '-') = 0 AND instr({body}, char(9)) = 0 \
         AND instr({body}, char(10)) = 0 AND instr({body}, char(13)) = 0 \
         AND NOT EXISTS (SELECT 1 FROM json_each({body}) AS x WHERE x.type IS NOT 'array' \
         OR json_array_length(x.value) <> 4 OR {bad})"
    );
    let bucket = format!("({now} / ?3)");
    let current = format!("max({bucket}, (SELECT coalesce(max(m.b), 0) FROM ({entries}) AS m))");
    let grouped = format!(
        "SELECT g.b AS b, sum(g.c) AS c, sum(g.f) AS f, sum(g.s) AS s FROM (\
         SELECT e.b, e.c, e.f, e.s FROM ({entries}) AS e \
         WHERE e.b <= {current} AND {current} - e.b < ?4 \
         UNION ALL SELECT {bucket}, ?5, 0, 0 WHERE {current} - {bucket} < ?4) AS g GROUP BY g.b"
    );
    let live = format!("(expires_at IS NULL OR expires_at > {now} / 1000000)");
    format!(
        "UPDATE {table} SET payload = ?2 || '[' || coalesce((\
         SELECT group_concat('[' || r.b || ',' || r.c || ',' || r.f || ',' || r.s || ']', \
         ',' ORDER BY r.b) FROM ({grouped}) AS r), '') || ']' || {tail}, \
         expires_at = ({now} + ?6 + 999999) / 1000000 \
         WHERE key = ?1 AND {live} \
         AND CASE WHEN octet_length(payload) <= {bytes} \
         AND length(payload) >= length(?2) + 5 \
         AND substr(payload, 1, length(?2)) = ?2 AND {cut} > 0 \
         AND ({tail} = '}}}}}}' OR {named}) \
         AND {bucket} <= {max} \
         THEN CASE WHEN {shape} THEN NOT EXISTS (SELECT 1 FROM ({grouped}) AS r \
         WHERE r.c > {max} OR r.f > {max} OR r.s > {max}) ELSE 0 END ELSE 0 END"
    )
}
