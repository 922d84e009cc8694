"""The nemesis of bench/faults: a seeded schedule of faults on the test hosts (network namespaces),
each written to nemesis.jsonl as it happens; everything healed at the end.
Runs in the host's namespace (as root); reaches each test host with `ip netns exec`."""
import argparse, json, os, random, subprocess, time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="quick")
ap.add_argument("--seed", type=int, required=True)
args = ap.parse_args()
TMP, RUN, PIDS, P = (os.environ[k] for k in ("FAULTS_TMP", "FAULTS_RUN", "FAULTS_PIDS", "FAULTS_PREFIX"))
PG = {"pg1": "10.77.0.11", "pg2": "10.77.0.12"}
ROLES = ["etcd", "pg1", "pg2", "api", "w1", "w2", "w3", "load"]
rnd = random.Random(args.seed * 7919 + 1)
t0 = time.time()


def log(fault, target, detail="", t=None):
    """t: when it happened, if that was before now (a kill is logged with the moment it was sent)."""
    line = {"t": t or int(time.time() * 1000), "fault": fault, "target": target, "detail": detail}
    with open(RUN + "/nemesis.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")
    print(json.dumps(line), flush=True)


def sh(*cmd, check=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode and check:
        raise RuntimeError(f"{cmd}: {r.stderr}")
    return r


def ns(role, *cmd):
    return sh("ip", "netns", "exec", P + role, *cmd)


def partition(role, way="both"):
    """Drops the host's packets to (out), from (in) or both ways with the PostgreSQL hosts."""
    for a in PG.values():
        if way in ("both", "out"):
            ns(role, "iptables", "-A", "OUTPUT", "-d", a, "-j", "DROP")
        if way in ("both", "in"):
            ns(role, "iptables", "-A", "INPUT", "-s", a, "-j", "DROP")
    log("partition", role, f"{way} from pg1,pg2")


def lossy(role):
    # netem where the kernel has it, else random loss with iptables (no delay then).
    r = ns(role, "tc", "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "100ms", "20ms", "loss", "5%")
    if r.returncode == 0:
        log("netem", role, "delay 100ms 20ms loss 5%")
        return
    for chain in ("INPUT", "OUTPUT"):
        ns(role, "iptables", "-A", chain, "-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP")
    log("netem", role, "loss 5% (iptables statistic; this kernel has no sch_netem, so no delay)")


def heal(role=None):
    for r in ([role] if role else ROLES):
        ns(r, "iptables", "-F")
        ns(r, "tc", "qdisc", "del", "dev", "eth0", "root")
    log("heal", role or "all")


def primary():
    for n, a in PG.items():
        r = ns("load", "curl", "-s", "-o", "/dev/null", "-m", "2", "-w", "%{http_code}", f"http://{a}:8008/primary")
        if r.stdout.strip() == "200":
            return n
    return None


def kill_primary():
    n = primary()
    if not n:
        log("kill-primary", "none", "no primary answered: skipped")
        return None
    pids = [int(p) for p in sh("ip", "netns", "pids", P + n).stdout.split()]
    t = int(time.time() * 1000)
    for p in pids:  # Patroni and every postgres process at once: the host dies
        signal_(p, 9)
    log("kill-primary", n, f"SIGKILL Patroni and PostgreSQL ({len(pids)} processes)", t)
    return n


def restart_pg(n):
    sh(f"{TMP}/start-{n}.sh")
    log("heal", n, "Patroni started again (rejoins as a standby)")


def pid(role):
    with open(f"{PIDS}/{role}.pid") as f:
        return int(f.read().strip())


def signal_(p, sig):
    try:
        os.kill(p, sig)
    except ProcessLookupError:
        pass


def sigstop(w, hold):
    t = int(time.time() * 1000)
    signal_(pid(w), 19)
    log("sigstop", w, f"{hold:.0f} s", t)
    time.sleep(hold)
    t = int(time.time() * 1000)
    signal_(pid(w), 18)
    log("sigcont", w, "", t)


def sigkill(w, down):
    t = int(time.time() * 1000)
    signal_(pid(w), 9)
    log("sigkill", w, f"restarted after {down:.0f} s", t)
    time.sleep(down)
    sh(f"{TMP}/start-{w}.sh")


def at(s):
    """Sleeps until s seconds after the start (with the seed's jitter)."""
    time.sleep(max(0.0, t0 + s + rnd.uniform(-1.5, 1.5) - time.time()))


def quick():
    at(10); partition("w1", "both")
    at(22); heal("w1")
    at(28); killed = kill_primary()
    at(45); partition("w2", "in")
    at(53); heal("w2")
    at(60); sigstop("w3", 6)
    at(70)
    if killed:
        restart_pg(killed)
    at(75); partition("api", "both")
    at(81); heal("api")
    at(86); sigkill("w1", 8)
    at(100); lossy("w2")
    at(115); heal("w2")
    at(120)


def full():
    end = t0 + 1800 - 20
    next_kill = t0 + rnd.uniform(120, 240)
    killed = None
    while time.time() < end:
        if killed and time.time() > killed[1]:
            restart_pg(killed[0])
            killed = None
        if time.time() > next_kill and not killed:
            n = kill_primary()
            if n:
                killed = (n, time.time() + rnd.uniform(30, 60))
            next_kill = time.time() + rnd.uniform(240, 360)
        else:
            hold = rnd.uniform(5, 25)
            kind = rnd.choice(["part-worker", "part-worker-in", "part-worker-out", "part-api", "lossy",
                               "sigstop", "sigkill"])
            w = rnd.choice(["w1", "w2", "w3"])
            if kind.startswith("part-worker"):
                partition(w, {"part-worker": "both", "part-worker-in": "in", "part-worker-out": "out"}[kind])
                time.sleep(hold); heal(w)
            elif kind == "part-api":
                partition("api", rnd.choice(["both", "out"]))
                time.sleep(min(hold, 12)); heal("api")
            elif kind == "lossy":
                lossy(rnd.choice(["w1", "w2", "w3", "api"]))
                time.sleep(hold); heal()
            elif kind == "sigstop":
                sigstop(w, min(hold, 15))
            else:
                sigkill(w, min(hold, 10))
        time.sleep(rnd.uniform(10, 40))
    if killed:
        restart_pg(killed[0])


try:
    quick() if args.mode == "quick" else full()
finally:
    heal()
    for w in ("w1", "w2", "w3"):
        signal_(pid(w), 18)
