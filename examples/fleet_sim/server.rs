//! What the store's servers say of themselves: the primaries of the store
//! a URL names, and their `INFO` counters summed.

/// The counters of every primary, summed: commands processed (those a
/// script runs included), scripts run (`EVALSHA` and `EVAL`: one per round
/// trip of the crate's store) and CPU seconds.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) commands: u64,
    pub(crate) scripts: u64,
    pub(crate) cpu: f64,
}

impl Counters {
    /// What happened between `self` and `later`, less the `INFO` that read
    /// `self` on each of `nodes` primaries.
    pub(crate) fn until(self, later: Counters, nodes: usize) -> Counters {
        Counters {
            commands: later
                .commands
                .saturating_sub(self.commands)
                .saturating_sub(nodes as u64),
            scripts: later.scripts.saturating_sub(self.scripts),
            cpu: (later.cpu - self.cpu).max(0.0),
        }
    }
}

/// The primaries of the store at `url`: the node itself, or for a
/// `redis+cluster://seed,seed` URL every master `CLUSTER NODES` on the
/// first seed lists (with the seed's user and password).
pub(crate) fn primaries(url: &str) -> Result<Vec<redis::Client>, String> {
    let Some(rest) = url.strip_prefix("redis+cluster://") else {
        return Ok(vec![client(url)?]);
    };
    let (auth, hosts) = match rest.rsplit_once('@') {
        Some((auth, hosts)) => (format!("{auth}@"), hosts),
        None => (String::new(), rest),
    };
    let seed = hosts.split([',', '/', '?']).next().unwrap_or_default();
    let mut connection = client(&format!("redis://{auth}{seed}"))?
        .get_connection()
        .map_err(|e| format!("{seed}: {e}"))?;
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut connection)
        .map_err(|e| format!("CLUSTER NODES on {seed}: {e}"))?;
    let mut masters = Vec::new();
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(address), Some(flags)) = (fields.get(1), fields.get(2)) else {
            continue;
        };
        if flags.split(',').any(|flag| flag == "master") && !flags.contains("fail") {
            let address = address.split('@').next().unwrap_or_default();
            masters.push(client(&format!("redis://{auth}{address}"))?);
        }
    }
    if masters.is_empty() {
        return Err(format!("CLUSTER NODES on {seed} lists no master"));
    }
    Ok(masters)
}

/// A client of the server at `url` (a Valkey URL read as the Redis one it
/// is).
fn client(url: &str) -> Result<redis::Client, String> {
    let url = match url.strip_prefix("valkey") {
        Some(rest) => format!("redis{rest}"),
        None => url.to_owned(),
    };
    redis::Client::open(url.as_str()).map_err(|e| format!("not a Redis URL ({e})"))
}

/// The counters of `nodes`, summed (one `INFO` each).
pub(crate) fn counters(nodes: &[redis::Client]) -> Result<Counters, String> {
    let mut sum = Counters::default();
    for node in nodes {
        let at = node.get_connection_info().addr();
        let mut connection = node.get_connection().map_err(|e| format!("{at}: {e}"))?;
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .arg("cpu")
            .arg("commandstats")
            .query(&mut connection)
            .map_err(|e| format!("INFO on {at}: {e}"))?;
        let one = parse(&info);
        sum.commands += one.commands;
        sum.scripts += one.scripts;
        sum.cpu += one.cpu;
    }
    Ok(sum)
}

/// The counters in one `INFO` reply (a field it lacks counts 0).
fn parse(info: &str) -> Counters {
    let mut counters = Counters::default();
    for line in info.lines() {
        let Some((name, value)) = line.trim().split_once(':') else {
            continue;
        };
        match name {
            "total_commands_processed" => counters.commands = value.parse().unwrap_or(0),
            "used_cpu_sys" | "used_cpu_user" => counters.cpu += value.parse().unwrap_or(0.0),
            "cmdstat_evalsha" | "cmdstat_eval" => {
                let calls = value
                    .split(',')
                    .find_map(|field| field.strip_prefix("calls="))
                    .and_then(|calls| calls.parse::<u64>().ok());
                counters.scripts += calls.unwrap_or(0);
            }
            _ => {}
        }
    }
    counters
}
