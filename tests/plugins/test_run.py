"""``pyframe run``: a script runs exactly as under ``python``, with the plugins shown and controlled."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pyframe.plugins import run as run_module
from tests.plugins.conftest import shipped_env

SCRIPT = """
import json, sys
import pyframe as pf

pf.manual_seed(0)
m = pf.nn.Linear(3, 2)
x = pf.randn(4, 3).requires_grad_()
(m(x) * 100).sum().backward()  # grad-clipper clips the gradient the Linear passes on to x
cfg = pf.plugins.effective_config()["values"]
print(json.dumps({
    "argv": sys.argv, "name": __name__, "path0": sys.path[0],
    "active": [p.name for p in pf.plugins.list() if p.enabled],
    "max_value": cfg.get("grad-clipper.max_value"),
    "grad": x.grad.abs().max().item(),
}))
if sys.argv[1:2] == ["exit"]:
    sys.exit(int(sys.argv[2]))
if sys.argv[1:2] == ["message"]:
    sys.exit("stopped: " + sys.argv[2])
if sys.argv[1:2] == ["raise"]:
    raise KeyError("boom")
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    pkg = tmp_path / "trainpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(SCRIPT)
    return tmp_path


def run(cwd, *args, env=None, names=("float32-enforcer", "grad-clipper", "nan-detector")):
    env = env if env is not None else shipped_env(cwd, names)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def out_json(r) -> dict:
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tail", [[], ["a", "--flag", "-p"], ["exit", "0"], ["exit", "3"], ["message", "x"], ["raise"]])
def test_run_reproduces_python(project, tail):
    plain = run(project, "train.py", *tail)
    ran = run(project, "-m", "pyframe", "run", "train.py", *tail)
    assert ran.returncode == plain.returncode
    assert out_json(ran) == out_json(plain)
    assert out_json(ran)["argv"] == ["train.py", *tail] and out_json(ran)["name"] == "__main__"
    assert out_json(ran)["path0"] == str(project)
    # python's own error output comes through unchanged: the script's traceback, or sys.exit's message
    plain_err = [line for line in plain.stderr.splitlines() if line.strip()]
    assert all(line in ran.stderr.splitlines() for line in plain_err), (plain.stderr, ran.stderr)
    if tail[:1] == ["raise"]:
        assert ran.returncode == 1 and "Traceback" in ran.stderr and "KeyError: 'boom'" in ran.stderr
        assert "run.py" not in ran.stderr and "runpy" not in ran.stderr  # the script's frames only
    # pyframe run adds the header first and the summary at the end; plain python prints nothing of it
    assert ran.stderr.startswith("plugins: float32-enforcer-0.1.0 (dtype='float32'")
    assert "plugin summary:\n  float32-enforcer: parameters converted 0" in ran.stderr
    assert "plugins:" not in plain.stderr and "plugin summary" not in plain.stderr


def test_run_module_form(project):
    plain = run(project, "-m", "trainpkg", "exit", "4")
    ran = run(project, "-m", "pyframe", "run", "-m", "trainpkg", "exit", "4")
    assert plain.returncode == ran.returncode == 4
    assert out_json(ran) == out_json(plain)
    assert out_json(ran)["argv"][1:] == ["exit", "4"] and out_json(ran)["argv"][0].endswith("__main__.py")


def test_python_stays_silent_unless_pyframe_report(project):
    env = shipped_env(project, ("grad-clipper",), PYFRAME_REPORT="1")
    r = run(project, "train.py", env=env)
    assert r.returncode == 0
    assert r.stderr.startswith("plugins: grad-clipper-0.1.1 (max_value=1.0")
    assert "plugin summary:\n  grad-clipper: gradients seen 1, gradients clipped 1" in r.stderr


def test_p_no_and_o_change_the_run_with_command_line_provenance(project):
    base = out_json(run(project, "-m", "pyframe", "run", "train.py"))
    assert base["grad"] == 1.0  # clipped to grad-clipper's default max_value
    off = run(project, "-m", "pyframe", "run", "-p", "no:grad-clipper", "train.py")
    assert "grad-clipper" not in out_json(off)["active"] and out_json(off)["grad"] > 1.0
    assert off.stderr.startswith("plugins: float32-enforcer") and "grad-clipper-0.1.1" not in off.stderr
    half = run(project, "-m", "pyframe", "run", "-o", "grad-clipper.max_value=0.5", "train.py")
    got = out_json(half)
    assert got["grad"] == 0.5
    assert got["max_value"]["value"] == 0.5 and got["max_value"]["source"].startswith("command line")
    assert "max_value=0.5" in half.stderr.splitlines()[0]


def test_p_enables_a_plugin_that_config_disables(project):
    (project / "pyframe.toml").write_text('disable_plugins = ["nan-detector"]\n')
    assert "nan-detector" not in out_json(run(project, "train.py"))["active"]
    r = run(project, "-m", "pyframe", "run", "-p", "nan-detector", "train.py")
    assert "nan-detector" in out_json(r)["active"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "grad-cliper", "train.py"], "unknown plugin 'grad-cliper' (did you mean 'grad-clipper'?)"),
        (["-p", "no:nan-detectr", "train.py"], "unknown plugin 'nan-detectr' (did you mean 'nan-detector'?)"),
        (["-o", "grad-clipper.max_value", "train.py"], "expected KEY=VALUE"),
        (["-o", "grad-clipper.max_vaule=2", "train.py"], "unknown setting of plugin 'grad-clipper'"),
        (["-o", "grad-clipper.max_value=big", "train.py"], "expected a number > 0.0, got 'big'"),
        (["-o", "grad-clipper.mode=nrom", "train.py"], "(did you mean 'norm'?)"),
        (["-o", "strict_plugin=true", "train.py"], "(did you mean 'strict_plugins'?)"),
        (["-o", "clipper.max_value=1", "train.py"], "unknown plugin 'clipper'"),
        (["--bogus", "train.py"], "unknown option '--bogus'"),
        ([], "a script (or -m MODULE) to run is required"),
    ],
)
def test_bad_command_line_is_one_line_and_exit_2(project, args, message):
    r = run(project, "-m", "pyframe", "run", *args)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""  # the script did not run
    first = r.stderr.splitlines()[0]
    assert first.startswith("pyframe run: ") and message in first, r.stderr
    assert "Traceback" not in r.stderr


def test_missing_script_or_module(project):
    r = run(project, "-m", "pyframe", "run", "nothere.py")
    assert r.returncode == 2 and "can't open file" in r.stderr
    r = run(project, "-m", "pyframe", "run", "-m", "nothere")
    assert r.returncode == 1 and "No module named nothere" in r.stderr


def test_broken_config_is_one_line_and_exit_2(project):
    (project / "pyframe.toml").write_bytes(b'disable_plugins = ["caf\xe9"]\n')
    r = run(project, "-m", "pyframe", "run", "train.py")
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "is not UTF-8" in r.stderr


def test_parse_keeps_everything_after_the_script():
    o = run_module.parse(["-p", "a", "-pno:b", "-o", "x.y=1", "--durations=3", "s.py", "-p", "c", "--trace"])
    assert (o.enable, o.disable, o.options, o.durations, o.trace) == (["a"], ["b"], ["x.y=1"], 3, False)
    assert (o.script, o.args) == ("s.py", ["-p", "c", "--trace"])
    o = run_module.parse(["--trace=t.json", "-m", "pkg.mod", "-x"])
    assert (o.trace, o.trace_file, o.module, o.args) == (True, "t.json", "pkg.mod", ["-x"])


def test_trace_and_durations_from_the_command_line(project, tmp_path):
    script = project / "f64.py"
    script.write_text(
        textwrap.dedent(
            """
            import pyframe as pf
            m = pf.nn.Sequential(pf.nn.Linear(3, 4, dtype=pf.float64), pf.nn.ReLU(), pf.nn.Linear(4, 1))
            opt = pf.optim.SGD(m.parameters(), lr=0.1)
            for _ in range(2):
                (m(pf.ones(5, 3) * 100).sum() * 100).backward()
                opt.step()
                opt.zero_grad()
            """
        )
    )
    r = run(project, "-m", "pyframe", "run", "--trace", "--durations", "f64.py")
    assert r.returncode == 0, r.stderr
    assert "float32-enforcer:\n    parameter 0.weight: replaced: dtype float64 -> float32" in r.stderr
    assert "parameter 0.bias: replaced: dtype float64 -> float32" in r.stderr
    assert "grad-clipper:\n    gradients at 2 replaced" in r.stderr or "gradients at" in r.stderr
    assert "plugin hook durations" in r.stderr and "(2 optimizer steps)" in r.stderr
    out = tmp_path / "trace.json"
    r = run(project, "-m", "pyframe", "run", f"--trace={out}", "f64.py")
    data = json.loads(out.read_text())
    assert data["steps"] == 2
    assert {(x["plugin"], x["name"]) for x in data["registrations"]} == {
        ("float32-enforcer", "0.weight"),
        ("float32-enforcer", "0.bias"),
    }
    assert data["durations"]["grad-clipper"]["calls"] > 0


def test_trace_is_written_when_the_script_raises_in_a_plugin(project, tmp_path):
    (project / "nan.py").write_text("import pyframe as pf\nm = pf.nn.Linear(2, 2)\nm(pf.full((1, 2), float('nan')))\n")
    out = tmp_path / "trace.json"
    r = run(project, "-m", "pyframe", "run", f"--trace={out}", "nan.py")
    assert r.returncode == 1 and "FloatingPointError: nan-detector: output of Linear" in r.stderr
    assert "plugin summary:" in r.stderr
    errors = json.loads(out.read_text())["errors"]
    assert [(e["plugin"], e["hook"]) for e in errors] == [("nan-detector", "forward")]
    assert errors[0]["error"].startswith("FloatingPointError: nan-detector")


ATTENTION = """
import pyframe as pf

class Attn(pf.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = pf.nn.Linear(4, 4, dtype=pf.float64)
        self.v_proj = pf.nn.Linear(4, 4, dtype=pf.float64)
        self.out = pf.nn.Linear(4, 4, dtype=pf.float64)

    def forward(self, x):
        return self.out(self.q_proj(x) * self.v_proj(x))

pf.manual_seed(0)
model = pf.nn.Sequential(Attn(), Attn())
opt = pf.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
for _ in range(2):
    (model(pf.randn(3, 4)) * 100).sum().backward()
    opt.step()
    opt.zero_grad()
print(pf.plugins.explain(model))
"""


def test_trace_names_every_parameter_each_plugin_changed(project, tmp_path):
    (project / "attn.py").write_text(ATTENTION)
    (project / "pyframe.toml").write_text('[lora]\ntargets = ["*.q_proj", "*.v_proj"]\nrank = 2\nalpha = 4\n')
    out = tmp_path / "trace.json"
    names = ("float32-enforcer", "grad-clipper", "lora")
    r = run(project, "-m", "pyframe", "run", f"--trace={out}", "attn.py", names=names)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    params = [f"{i}.{layer}.{p}" for i in (0, 1) for layer in ("q_proj", "v_proj", "out") for p in ("weight", "bias")]

    def changed(plugin, action):
        return sorted(x["name"] for x in data["registrations"] if x["plugin"] == plugin and x["action"] == action)

    assert changed("float32-enforcer", "replaced") == sorted(params)
    assert changed("lora", "requires_grad set") == sorted(params)  # PEFT freezes the whole base model
    adapted = sorted(x["name"] for x in data["registrations"] if x["action"].startswith("adapted"))
    assert adapted == [f"{i}.{layer}.weight" for i in (0, 1) for layer in ("q_proj", "v_proj")]
    clipped = {g["module"] for g in data["gradients"] if g["plugin"] == "grad-clipper"}
    assert clipped and clipped <= {f"{i}.{layer}" for i in (0, 1) for layer in ("q_proj", "v_proj", "out")} | {"0", "1"}
    assert data["steps"] == 2 and set(names) <= set(data["durations"])  # (and the built-in parametrize)
    # explain(model), printed by the script, says the same per parameter
    assert "0.q_proj.weight: float32-enforcer replaced: dtype float64 -> float32; lora requires_grad set" in r.stdout
    assert "lora adapted (rank 2, alpha 4, dropout 0)" in r.stdout
