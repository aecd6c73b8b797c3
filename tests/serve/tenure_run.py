"""What the serve scripts share: run the `tenure` binary, start `tenure serve`."""

import subprocess


def tenure(bin, env, *args, stdin=b""):
    """Run `bin ARGS` with `env`; its stdout, or exit with its stderr."""
    r = subprocess.run([bin, *args], env=env, input=stdin, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"tenure {' '.join(args)}: exit {r.returncode}: {r.stderr.decode()}")
    return r.stdout.decode()


def serve(bin, env):
    """Start `tenure serve` on a free loopback port: the process and its base URL."""
    p = subprocess.Popen([bin, "serve", "--listen", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE)
    addr = p.stderr.readline().decode().split("http://")[1].split("/")[0]
    return p, f"http://{addr}"
