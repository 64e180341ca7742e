<?php
// The other side of the interop tests (tests/shared/php/): a circuit kept
// the way milon/fuse's `CircuitBreaker` keeps it, in the stores a Laravel
// application gives it, written for these tests from milon/fuse's
// documented behaviour.
//
// Every call reads the whole snapshot from the store (absent: closed),
// decides, and writes the whole snapshot back: a read-modify-write with no
// compare-and-set, milon/fuse's own, so the crate meets exactly the writes
// a PHP application makes.
//
//   php milon.php STORE URL [--prefix=fuse] [--app=A] [--name=N]
//       [--operation=O] [--threshold=8] [--window=60] [--open=30]
//       [--probes=2] [--table=fuse_circuits] [--now=UNIX]
//       [--connection-prefix=laravel_database_] [--cache-prefix=laravel_cache_]
//
// STORE is one of
//   laravel   Laravel's cache on Redis (milon/fuse's default store):
//             phpredis with the connection's prefix as OPT_PREFIX, the
//             cache's prefix before the key, PHP's serialize() of the
//             array, SETEX; the database from URL's path, else 1
//             (Laravel's REDIS_CACHE_DB).
//   json      a PSR-16 cache on Redis keeping JSON: the key as it is,
//             json_encode, SET ... EX; the database from the URL, else 0.
//   database  milon/fuse's DatabaseStore over PDO: the `fuse_circuits`
//             table on PostgreSQL (postgres://user:pass@host:port/db) or
//             SQLite (sqlite://PATH); a row with `expires_at < now` is
//             deleted and read as absent.
//
// Commands, one a line on stdin, each answered by one line on stdout:
//   allow            granted | rejected
//   success, failure, release, forget
//                    ok
//   state            the snapshot as JSON (read only, nothing written)
//   key              the circuit's key (prefix:app:name:operation)
//   now [UNIX|system]
//                    pins the clock to a Unix second (the breaker's and
//                    the store's), or back to the system's; answers the
//                    clock's second
//   sleep-until UNIX waits until the system clock reaches that second; ok
//   quit             bye, and exits
// A failure is answered `error MESSAGE`; a PHP extension the store needs
// and does not have is said at start as `missing EXTENSION`. Otherwise the
// first line is `ready`.

declare(strict_types=1);

// Laravel turns warnings and notices into exceptions; so does this script
// (unserialize() of what is not PHP's serialize() warns).
set_error_handler(static function (int $severity, string $message): bool {
    throw new ErrorException($message, 0, $severity);
});

function say(string $line): void
{
    fwrite(STDOUT, $line . "\n");
    fflush(STDOUT);
}

/** The script's clock: the system's, or a pinned Unix second. */
final class Clock
{
    public ?int $pinned = null;

    public function now(): int
    {
        return $this->pinned ?? time();
    }
}

// ---- Stores: get (null when absent), put (whole array, TTL seconds), forget.

interface Store
{
    public function get(string $key): ?array;
    public function put(string $key, array $state, int $ttl): void;
    public function forget(string $key): void;
}

/** A phpredis connection to URL (redis://[user:pass@]host:port[/db]). */
function redis_connect(string $url, int $defaultDb): Redis
{
    $parts = parse_url($url);
    if ($parts === false || !isset($parts['host'])) {
        throw new InvalidArgumentException("not a Redis URL: $url");
    }
    $redis = new Redis();
    $redis->connect($parts['host'], $parts['port'] ?? 6379, 5.0);
    if (isset($parts['pass'])) {
        $auth = isset($parts['user']) && $parts['user'] !== ''
            ? [rawurldecode($parts['user']), rawurldecode($parts['pass'])]
            : rawurldecode($parts['pass']);
        $redis->auth($auth);
    }
    $path = trim($parts['path'] ?? '', '/');
    $redis->select($path === '' ? $defaultDb : (int) $path);
    return $redis;
}

/** Laravel's Redis cache store, as milon/fuse's LaravelCacheStore uses it. */
final class LaravelRedisCache implements Store
{
    public function __construct(private Redis $redis, private string $cachePrefix)
    {
    }

    public function get(string $key): ?array
    {
        $raw = $this->redis->get($this->cachePrefix . $key);
        if ($raw === false || $raw === null) {
            return null;
        }
        // Laravel's RedisStore keeps numbers as they are, the rest serialized.
        $value = is_numeric($raw) ? $raw : unserialize($raw);
        return is_array($value) ? $value : null;
    }

    public function put(string $key, array $state, int $ttl): void
    {
        $this->redis->setex($this->cachePrefix . $key, max(1, $ttl), serialize($state));
    }

    public function forget(string $key): void
    {
        $this->redis->del($this->cachePrefix . $key);
    }
}

/** A PSR-16 cache on Redis that keeps the array as JSON. */
final class JsonRedisCache implements Store
{
    public function __construct(private Redis $redis)
    {
    }

    public function get(string $key): ?array
    {
        $raw = $this->redis->get($key);
        if (!is_string($raw)) {
            return null;
        }
        $value = json_decode($raw, true);
        return is_array($value) ? $value : null;
    }

    public function put(string $key, array $state, int $ttl): void
    {
        $this->redis->set($key, json_encode($state, JSON_THROW_ON_ERROR), ['ex' => $ttl]);
    }

    public function forget(string $key): void
    {
        $this->redis->del($key);
    }
}

/** milon/fuse's DatabaseStore: one row per key, expiry in whole seconds. */
final class DatabaseStore implements Store
{
    public function __construct(private PDO $pdo, private string $table, private Clock $clock)
    {
    }

    public function get(string $key): ?array
    {
        $select = $this->pdo->prepare("SELECT payload, expires_at FROM {$this->table} WHERE \"key\" = ? LIMIT 1");
        $select->execute([$key]);
        $row = $select->fetch(PDO::FETCH_ASSOC);
        // Ends the read (an open cursor holds SQLite's read snapshot, and
        // a write after it would then fail at once as busy).
        $select->closeCursor();
        if ($row === false) {
            return null;
        }
        // Live while expires_at >= now: gone only once now is past it.
        if ($row['expires_at'] !== null && (int) $row['expires_at'] < $this->clock->now()) {
            $this->forget($key);
            return null;
        }
        $value = is_string($row['payload']) ? json_decode($row['payload'], true) : null;
        return is_array($value) ? $value : null;
    }

    public function put(string $key, array $state, int $ttl): void
    {
        $payload = json_encode($state, JSON_THROW_ON_ERROR);
        $expires = $ttl > 0 ? $this->clock->now() + $ttl : null;
        // Laravel's updateOrInsert: look, then update or insert (no lock).
        $exists = $this->pdo->prepare("SELECT 1 FROM {$this->table} WHERE \"key\" = ?");
        $exists->execute([$key]);
        $found = $exists->fetchColumn();
        $exists->closeCursor();
        if ($found === false) {
            $this->pdo->prepare("INSERT INTO {$this->table} (\"key\", payload, expires_at) VALUES (?, ?, ?)")
                ->execute([$key, $payload, $expires]);
        } else {
            $this->pdo->prepare("UPDATE {$this->table} SET payload = ?, expires_at = ? WHERE \"key\" = ?")
                ->execute([$payload, $expires, $key]);
        }
    }

    public function forget(string $key): void
    {
        $this->pdo->prepare("DELETE FROM {$this->table} WHERE \"key\" = ?")->execute([$key]);
    }
}

/** A PDO connection to a postgres:// or sqlite:// URL. */
function pdo_connect(string $url): PDO
{
    $options = [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION];
    if (str_starts_with($url, 'sqlite:')) {
        $path = preg_replace('#^sqlite:(//)?#', '', explode('?', $url, 2)[0]);
        // Wait for another process's write lock, as Laravel's SQLite
        // connection does with its busy timeout (the crate waits 5 s too).
        return new PDO("sqlite:$path", null, null, $options + [PDO::ATTR_TIMEOUT => 5]);
    }
    $parts = parse_url($url);
    if ($parts === false || !isset($parts['host'])) {
        throw new InvalidArgumentException("not a database URL: $url");
    }
    $dsn = sprintf('pgsql:host=%s;port=%d;dbname=%s', $parts['host'], $parts['port'] ?? 5432, trim($parts['path'] ?? '', '/'));
    $user = isset($parts['user']) ? rawurldecode($parts['user']) : null;
    $pass = isset($parts['pass']) ? rawurldecode($parts['pass']) : null;
    return new PDO($dsn, $user, $pass, $options);
}

// ---- The breaker: milon/fuse's rules over the array.

final class Breaker
{
    public function __construct(
        private Store $store,
        private Clock $clock,
        public readonly string $key,
        private int $threshold,
        private int $window,
        private int $open,
        private int $probes,
    ) {
    }

    /** The snapshot under the key, read field by field; absent is closed. */
    public function hydrate(): array
    {
        $raw = $this->store->get($this->key);
        if ($raw === null) {
            return self::closed();
        }
        $state = (string) ($raw['state'] ?? 'closed');
        if (!in_array($state, ['closed', 'open', 'half_open'], true)) {
            throw new UnexpectedValueException("not a state: $state");
        }
        $failures = is_array($raw['failures'] ?? null) ? $raw['failures'] : [];
        return [
            'state' => $state,
            'opened_at' => isset($raw['opened_at']) ? (int) $raw['opened_at'] : null,
            'failures' => array_values(array_map('intval', $failures)),
            'half_open_successes' => (int) ($raw['half_open_successes'] ?? 0),
            'half_open_inflight' => (int) ($raw['half_open_inflight'] ?? 0),
        ];
    }

    public function allow(): bool
    {
        $s = $this->hydrate();
        if ($s['state'] === 'closed') {
            return true;
        }
        if ($s['state'] === 'open') {
            $openedAt = $s['opened_at'] ?? $this->clock->now();
            if ($this->clock->now() < $openedAt + $this->open) {
                return false;
            }
            $s = self::snapshot('half_open', $openedAt, [], 0, 0);
        }
        // Half-open: reserve a probe if one is free.
        if ($s['half_open_inflight'] >= $this->probes) {
            return false;
        }
        $this->persist(self::snapshot('half_open', $s['opened_at'], [], $s['half_open_successes'], $s['half_open_inflight'] + 1));
        return true;
    }

    public function success(): void
    {
        $s = $this->hydrate();
        if ($s['state'] !== 'half_open') {
            // Any other state: written back closed (a late success closes).
            $this->persist(self::closed());
            return;
        }
        $successes = $s['half_open_successes'] + 1;
        $inflight = max(0, $s['half_open_inflight'] - 1);
        $this->persist($successes >= $this->probes
            ? self::closed()
            : self::snapshot('half_open', $s['opened_at'], [], $successes, $inflight));
    }

    public function failure(): void
    {
        $now = $this->clock->now();
        $s = $this->hydrate();
        if ($s['state'] === 'half_open') {
            $this->persist(self::snapshot('open', $now, [$now], 0, 0));
            return;
        }
        $since = $now - $this->window;
        $failures = array_values(array_filter($s['failures'], static fn (int $t): bool => $t >= $since));
        $failures[] = $now;
        $this->persist(count($failures) >= $this->threshold
            ? self::snapshot('open', $now, $failures, 0, 0)
            : self::snapshot('closed', null, $failures, 0, 0));
    }

    /** A probe ended without a verdict (an ignored error). */
    public function release(): void
    {
        $s = $this->hydrate();
        if ($s['state'] === 'half_open') {
            $this->persist(self::snapshot('half_open', $s['opened_at'], [], $s['half_open_successes'], max(0, $s['half_open_inflight'] - 1)));
        }
    }

    public function forget(): void
    {
        $this->store->forget($this->key);
    }

    private function persist(array $snapshot): void
    {
        $this->store->put($this->key, $snapshot, 2 * max($this->window, $this->open));
    }

    private static function snapshot(string $state, ?int $openedAt, array $failures, int $successes, int $inflight): array
    {
        return [
            'state' => $state,
            'opened_at' => $openedAt,
            'failures' => $failures,
            'half_open_successes' => $successes,
            'half_open_inflight' => $inflight,
        ];
    }

    private static function closed(): array
    {
        return self::snapshot('closed', null, [], 0, 0);
    }
}

// ---- Arguments, then the command loop.

[$kind, $url] = [$argv[1] ?? '', $argv[2] ?? ''];
$opt = [
    'prefix' => 'fuse', 'app' => '', 'name' => 'default', 'operation' => '',
    'threshold' => '8', 'window' => '60', 'open' => '30', 'probes' => '2',
    'table' => 'fuse_circuits', 'now' => '',
    'connection-prefix' => 'laravel_database_', 'cache-prefix' => 'laravel_cache_',
];
foreach (array_slice($argv, 3) as $arg) {
    if (!preg_match('/^--([a-z-]+)=(.*)$/s', $arg, $m) || !array_key_exists($m[1], $opt)) {
        say("error unknown argument: $arg");
        exit(2);
    }
    $opt[$m[1]] = $m[2];
}
$needs = ['laravel' => 'redis', 'json' => 'redis', 'database' => str_starts_with($url, 'sqlite:') ? 'pdo_sqlite' : 'pdo_pgsql'];
if (!isset($needs[$kind])) {
    say("error unknown store: $kind (laravel, json or database)");
    exit(2);
}
if (!extension_loaded($needs[$kind])) {
    say("missing {$needs[$kind]}");
    exit(3);
}

$clock = new Clock();
$clock->pinned = $opt['now'] === '' ? null : (int) $opt['now'];
try {
    switch ($kind) {
        case 'laravel':
            $redis = redis_connect($url, 1);
            $redis->setOption(Redis::OPT_PREFIX, $opt['connection-prefix']);
            $store = new LaravelRedisCache($redis, $opt['cache-prefix']);
            break;
        case 'json':
            $store = new JsonRedisCache(redis_connect($url, 0));
            break;
        default:
            $store = new DatabaseStore(pdo_connect($url), $opt['table'], $clock);
    }
} catch (Throwable $e) {
    say('error ' . str_replace("\n", ' ', $e->getMessage()));
    exit(1);
}
// milon/fuse's key: the non-empty pieces joined by ':'.
$key = implode(':', array_filter([$opt['prefix'], $opt['app'], $opt['name'], $opt['operation']], static fn (string $p): bool => $p !== ''));
$breaker = new Breaker($store, $clock, $key, (int) $opt['threshold'], (int) $opt['window'], (int) $opt['open'], (int) $opt['probes']);
say('ready');

while (($line = fgets(STDIN)) !== false) {
    $words = preg_split('/\s+/', trim($line), -1, PREG_SPLIT_NO_EMPTY);
    $command = $words[0] ?? '';
    $argument = $words[1] ?? null;
    try {
        switch ($command) {
            case 'allow':
                say($breaker->allow() ? 'granted' : 'rejected');
                break;
            case 'success':
            case 'failure':
            case 'release':
            case 'forget':
                $breaker->$command();
                say('ok');
                break;
            case 'state':
                say(json_encode($breaker->hydrate(), JSON_THROW_ON_ERROR));
                break;
            case 'key':
                say($breaker->key);
                break;
            case 'now':
                if ($argument !== null) {
                    $clock->pinned = $argument === 'system' ? null : (int) $argument;
                }
                say((string) $clock->now());
                break;
            case 'sleep-until':
                if (microtime(true) < (float) $argument) {
                    time_sleep_until((float) $argument);
                }
                say('ok');
                break;
            case 'quit':
                say('bye');
                exit(0);
            default:
                say("error unknown command: $command");
        }
    } catch (Throwable $e) {
        say('error ' . str_replace("\n", ' ', $e->getMessage()));
    }
}
