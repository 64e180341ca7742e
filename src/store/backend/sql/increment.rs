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
//! commas and brackets, `]}}`) is kept as it is, unless the increment
//! names a reporter (a failure's or a slow call's): then the reporters are
//! recorded as [`Increment::apply`](crate::store::Increment::apply) says,
//! and the statement returns the payload written and the database's time.
//! Parameters: the key, the prefix, the width in microseconds, the
//! window's buckets, the calls, the time-to-live in microseconds, the
//! failed calls, the slow calls, the reporter (`NULL`: none) and how many
//! reporters the window keeps.

use super::table::Table;
use crate::store::Increment;
use crate::store::model::payload::PayloadError;

/// A number of an entry: at most 15 digits, no leading zero.
const NUMBER: &str = "(0|[1-9][0-9]{0,14})";

/// A reporter's time: at most 16 digits, no leading zero (and below 2^53).
const TIME: &str = "(0|[1-9][0-9]{0,15})";

/// The latest reporter's time an increment reads or writes (2^53 - 1).
const LATEST: u64 = (1 << 53) - 1;

/// What may follow the buckets besides `}}}` (PostgreSQL's regular
/// expression): the window's reporters.
const REPORTERS: &str = r#"^\},"reporters":\[(\[|\]|[0-9]|,)*\]\}\}$"#;

/// The statement on PostgreSQL (`now`: the server's time in microseconds);
/// `answers`: it returns the payload written and the server's time.
pub(super) fn postgres(table: &Table, now: &str, answers: bool) -> String {
    let max = Increment::MAX;
    let bytes = PayloadError::MAX_BYTES;
    let entry = format!("\\[{NUMBER},{NUMBER},{NUMBER},{NUMBER}\\]");
    let shape = format!("^\\[({entry}(,{entry})*)?\\]$");
    let report = format!("\\[{NUMBER},{TIME}\\]");
    let named_shape = format!("^\\[({report}(,{report})*)?\\]$");
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
         UNION ALL SELECT {bucket}, $5::bigint, $7::bigint, $8::bigint \
         WHERE {current} - {bucket} < $4::bigint) AS g GROUP BY g.b"
    );
    // The reporters: `[id, at_us]` entries between `"reporters":` and `}}`.
    let list = format!("substr({tail}, 15, char_length({tail}) - 16)");
    let reports = format!(
        "SELECT (y->>0)::bigint AS id, (y->>1)::bigint AS at FROM json_array_elements(\
         (CASE WHEN {tail} = '}}}}}}' THEN '[]' ELSE {list} END)::json) AS y"
    );
    let recorded = format!(
        "SELECT r.id, r.at FROM ({reports}) AS r WHERE r.id <> $9::bigint \
         UNION ALL SELECT $9::bigint, GREATEST(k.now, coalesce(\
         (SELECT r.at FROM ({reports}) AS r WHERE r.id = $9::bigint), 0))"
    );
    let covered = format!(
        "SELECT a.id, a.at FROM ({recorded}) AS a \
         WHERE a.at / $3::bigint <= {current} AND {current} - a.at / $3::bigint < $4::bigint \
         ORDER BY a.at DESC, a.id DESC LIMIT $10::bigint"
    );
    let new_tail = format!(
        "CASE WHEN $9::bigint IS NULL THEN {tail} ELSE coalesce((\
         SELECT '}},\"reporters\":[' || string_agg(format('[%s,%s]', q.id, q.at), ',' \
         ORDER BY q.at, q.id) || ']}}}}' FROM ({covered}) AS q), '}}}}}}') END"
    );
    // A reporter's increment applies to reporters of the right shape, each
    // named once, or to none and no failed or slow call.
    let reporters_ok = format!(
        "CASE WHEN $9::bigint IS NULL THEN true \
         WHEN k.now > {LATEST} THEN false \
         WHEN {tail} = '}}}}}}' THEN NOT EXISTS (SELECT 1 FROM ({entries}) AS e \
         WHERE e.f > 0 OR e.s > 0) \
         WHEN {list} ~ '{named_shape}' THEN \
         NOT EXISTS (SELECT 1 FROM ({reports}) AS r WHERE r.at > {LATEST}) \
         AND (SELECT count(*) = count(DISTINCT r.id) FROM ({reports}) AS r) \
         ELSE false END"
    );
    let returning = if answers {
        " RETURNING t.payload::text AS p, k.now AS now"
    } else {
        ""
    };
    let update = format!(
        "UPDATE {table} AS t SET payload = ($2::text || '[' || coalesce((\
         SELECT string_agg(format('[%s,%s,%s,%s]', r.b, r.c, r.f, r.s), ',' ORDER BY r.b) \
         FROM ({grouped}) AS r), '') || ']' || {new_tail})::json, \
         expires_at = (k.now + $6::bigint + 999999) / 1000000 \
         FROM (SELECT {now} AS now) AS k \
         WHERE t.key = $1 AND (t.expires_at IS NULL OR t.expires_at >= k.now / 1000000) \
         AND CASE WHEN octet_length({text}) <= {bytes} \
         AND char_length({text}) >= char_length($2) + 5 \
         AND left({text}, char_length($2)) = $2 AND {cut} > 0 \
         AND ({tail} = '}}}}}}' OR {tail} ~ '{REPORTERS}') \
         AND {body} ~ '{shape}' AND {bucket} <= {max} \
         THEN NOT EXISTS (SELECT 1 FROM ({grouped}) AS r \
         WHERE r.c > {max} OR r.f > {max} OR r.s > {max}) AND {reporters_ok} ELSE false END\
         {returning}"
    );
    if !answers {
        return update;
    }
    // Applied: 1, the payload written and the time; else 0, what the key
    // holds (unless above the largest read) and the time.
    format!(
        "WITH u AS ({update}) SELECT 1::bigint, u.p, u.now FROM u \
         UNION ALL SELECT 0::bigint, (SELECT h.payload::text FROM {table} AS h \
         WHERE h.key = $1 AND (h.expires_at IS NULL OR h.expires_at >= c.now / 1000000) \
         AND octet_length(h.payload::text) <= {bytes}), c.now \
         FROM (SELECT {now} AS now) AS c WHERE NOT EXISTS (SELECT 1 FROM u)"
    )
}

/// The statement on SQLite (`now`: the database's time in microseconds,
/// the same for every use within the statement); `answers`: it returns
/// the payload written and the database's time.
pub(super) fn sqlite(table: &Table, now: &str, answers: bool) -> String {
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
         UNION ALL SELECT {bucket}, ?5, ?7, ?8 WHERE {current} - {bucket} < ?4) AS g GROUP BY g.b"
    );
    let (new_tail, reporters_ok) = sqlite_reporters(&tail, &entries, &current, now);
    let live = format!("(expires_at IS NULL OR expires_at >= {now} / 1000000)");
    let returning = if answers {
        format!(" RETURNING payload, {now}")
    } else {
        String::new()
    };
    format!(
        "UPDATE {table} SET payload = ?2 || '[' || coalesce((\
         SELECT group_concat('[' || r.b || ',' || r.c || ',' || r.f || ',' || r.s || ']', \
         ',' ORDER BY r.b) FROM ({grouped}) AS r), '') || ']' || {new_tail}, \
         expires_at = ({now} + ?6 + 999999) / 1000000 \
         WHERE key = ?1 AND {live} \
         AND CASE WHEN octet_length(payload) <= {bytes} \
         AND length(payload) >= length(?2) + 5 \
         AND substr(payload, 1, length(?2)) = ?2 AND {cut} > 0 \
         AND ({tail} = '}}}}}}' OR {named}) \
         AND {bucket} <= {max} \
         THEN CASE WHEN {shape} THEN CASE WHEN NOT EXISTS (SELECT 1 FROM ({grouped}) AS r \
         WHERE r.c > {max} OR r.f > {max} OR r.s > {max}) THEN {reporters_ok} ELSE 0 END \
         ELSE 0 END ELSE 0 END{returning}"
    )
}

/// SQLite's reporters (see the module docs): what follows the buckets
/// once the increment's reporter is recorded, and whether the reporters
/// are ones it applies to, given the tail, the entries, the current
/// bucket and the time.
fn sqlite_reporters(tail: &str, entries: &str, current: &str, now: &str) -> (String, String) {
    let max = Increment::MAX;
    // The reporters: `[id, at_us]` entries between `"reporters":` and `}}`.
    let list = format!("substr({tail}, 15, length({tail}) - 16)");
    let listed = format!("(CASE WHEN {tail} = '}}}}}}' THEN '[]' ELSE {list} END)");
    let reports = format!(
        "SELECT json_extract(y.value, '$[0]') AS id, json_extract(y.value, '$[1]') AS at \
         FROM json_each({listed}) AS y"
    );
    let recorded = format!(
        "SELECT r.id AS id, r.at AS at FROM ({reports}) AS r WHERE r.id <> ?9 \
         UNION ALL SELECT ?9, max({now}, coalesce(\
         (SELECT r.at FROM ({reports}) AS r WHERE r.id = ?9), 0))"
    );
    let covered = format!(
        "SELECT a.id AS id, a.at AS at FROM ({recorded}) AS a \
         WHERE a.at / ?3 <= {current} AND {current} - a.at / ?3 < ?4 \
         ORDER BY a.at DESC, a.id DESC LIMIT ?10"
    );
    let new_tail = format!(
        "CASE WHEN ?9 IS NULL THEN {tail} ELSE coalesce((\
         SELECT '}},\"reporters\":[' || group_concat('[' || q.id || ',' || q.at || ']', ',' \
         ORDER BY q.at, q.id) || ']}}}}' FROM ({covered}) AS q), '}}}}}}') END"
    );
    let bad_report = (0..2)
        .map(|at| {
            let bound = if at == 0 { max } else { LATEST };
            format!(
                "json_type(y.value, '$[{at}]') IS NOT 'integer' \
                 OR json_extract(y.value, '$[{at}]') NOT BETWEEN 0 AND {bound}"
            )
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    let reporters_ok = format!(
        "CASE WHEN ?9 IS NULL THEN 1 \
         WHEN {now} > {LATEST} THEN 0 \
         WHEN {tail} = '}}}}}}' THEN NOT EXISTS (SELECT 1 FROM ({entries}) AS e \
         WHERE e.f > 0 OR e.s > 0) \
         WHEN json_valid({list}) AND json_type({list}) = 'array' \
         AND NOT EXISTS (SELECT 1 FROM json_each({list}) AS y WHERE y.type IS NOT 'array' \
         OR json_array_length(y.value) <> 2 OR {bad_report}) \
         THEN (SELECT count(*) = count(DISTINCT r.id) FROM ({reports}) AS r) \
         ELSE 0 END"
    );
    (new_tail, reporters_ok)
}
