"""porch's host for an Azure ML parallel entry script.

porch starts this file (embedded in the porch binary) with one argument, a
JSON object describing the step. It imports the entry script, calls init()
once, then runs mini-batches that porch sends on fd 3 and reports on fd 4,
one JSON object a line each way. The script's own stdout and stderr are the
process's, which porch sends to the step's log files.

Requests:  {"op": "run", "id", "files" | "table", "result_path"}
           {"op": "shutdown"}
Events:    {"ev": "ready"} | {"ev": "init_failed", "error", "traceback"}
           {"ev": "loaded", "id", "items"}
           {"ev": "done", "id", "items", "returned", "load", "run"}
           {"ev": "failed", "id", "kind", "error", "traceback", "items"}

Python 3.8+, standard library only; pandas is imported for tabular steps.
"""

import importlib.util
import inspect
import io
import json
import logging
import os
import re
import sys
import time
import traceback
import types

LOGGER_NAME = "porch.entry_script"
ENCODINGS = {
    "utf8": "utf-8",
    "utf-8": "utf-8",
    "utf8bom": "utf-8-sig",
    "ascii": "ascii",
    "latin1": "latin-1",
    "iso88591": "iso-8859-1",
    "windows1252": "cp1252",
}


class Events:
    """Writes events to porch, one unbuffered line each."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, **event):
        data = (json.dumps(event, default=str) + "\n").encode("utf-8")
        while data:
            n = os.write(self.fd, data)
            data = data[n:]


class EntryScript:
    """Azure ML's azureml_user.parallel_run.EntryScript: one instance per
    process, giving the entry script its logger and folders."""

    _instance = None
    _config = {}

    def __new__(cls):
        if cls._instance is None:
            inst = super().__new__(cls)
            cfg = cls._config
            inst.logger = logging.getLogger(LOGGER_NAME)
            inst.working_dir = cfg.get("dir", os.getcwd())
            inst.output_dir = cfg.get("output_dir") or inst.working_dir
            inst.log_dir = cfg.get("user_log_dir") or inst.working_dir
            inst.node_name = cfg.get("node", "")
            inst.process_name = cfg.get("process", "")
            cls._instance = inst
        return cls._instance

    def get_logger(self):
        """Returns the entry-script logger."""
        return self.logger


class MiniBatchContext:
    """The second argument of run(mini_batch, mini_batch_context)."""

    def __init__(self, index, partition_key_value):
        self.minibatch_index = index
        self.partition_key_value = partition_key_value
        self.dataset = None

    def __repr__(self):
        return "MiniBatchContext(minibatch_index=%r, partition_key_value=%r)" % (
            self.minibatch_index,
            self.partition_key_value,
        )


class LoadError(Exception):
    """A mini-batch that could not be loaded."""


def install_helper_module(cfg):
    """Makes `from azureml_user.parallel_run import EntryScript` work."""
    EntryScript._config = cfg
    pkg = types.ModuleType("azureml_user")
    pkg.__path__ = []
    mod = types.ModuleType("azureml_user.parallel_run")
    mod.EntryScript = EntryScript
    pkg.parallel_run = mod
    sys.modules["azureml_user"] = pkg
    sys.modules["azureml_user.parallel_run"] = mod


def secrets(cfg):
    """The values of the variables porch names as secrets, longest first."""
    values = {os.environ.get(name, "") for name in cfg.get("secret_vars") or []}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


class RedactingFormatter(logging.Formatter):
    """Blanks the worker's secrets out of every record, tracebacks too."""

    def __init__(self, fmt, secrets):
        super().__init__(fmt)
        self.secrets = secrets

    def format(self, record):
        text = super().format(record)
        for s in self.secrets:
            text = text.replace(s, "<redacted>")
        return text


def setup_logger(cfg):
    logger = logging.getLogger(LOGGER_NAME)
    logger.propagate = False
    level = (cfg.get("logging_level") or "INFO").upper()
    logger.setLevel(getattr(logging, level, logging.INFO))
    path = cfg.get("entry_log")
    if path:
        handler = logging.FileHandler(path, encoding="utf-8")
        fmt = "%(asctime)s|%(levelname)s|%(process)d|%(name)s|%(message)s"
        handler.setFormatter(RedactingFormatter(fmt, secrets(cfg)))
        logger.addHandler(handler)
    else:
        logger.addHandler(logging.NullHandler())
    return logger


def one_line(exc):
    text = str(exc).strip().replace("\n", " ")
    name = type(exc).__name__
    return "%s: %s" % (name, text) if text else name


def load_script(cfg):
    path = cfg["script"]
    name = os.path.splitext(os.path.basename(path))[0] or "entry_script"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot import %r as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def takes_context(run):
    """Whether run() takes a second positional argument."""
    try:
        params = inspect.signature(run).parameters.values()
    except (TypeError, ValueError):
        return False
    n = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n >= 2


def start(cfg, events):
    """Prepares the process and runs init(); returns run() and its arity,
    or None after reporting init_failed."""
    script = cfg["script"]
    stage = "start"
    try:
        if cfg.get("tabular"):
            try:
                import pandas  # noqa: F401
            except ImportError as exc:
                events.send(
                    ev="init_failed",
                    error="the step's input is tabular, so run() gets a pandas DataFrame, "
                    "but pandas cannot be imported by %s (%s): install pandas for that "
                    "interpreter (%s -m pip install pandas; Debian's /usr/bin/python3 gets it "
                    "from apt-get install python3-pandas), or run the worker with an interpreter "
                    "that has it (porch worker --python PATH, or PORCH_PYTHON=PATH)"
                    % (sys.executable, one_line(exc), sys.executable),
                    traceback=traceback.format_exc(),
                )
                return None
        stage = "import entry script %r" % os.path.basename(script)
        module = load_script(cfg)
        run = getattr(module, "run", None)
        if not callable(run):
            events.send(
                ev="init_failed",
                error="entry script %r defines no run(mini_batch) function: define one"
                % os.path.basename(script),
                traceback="",
            )
            return None
        init = getattr(module, "init", None)
        if callable(init):
            stage = "init()"
            init()
    except Exception as exc:
        events.send(
            ev="init_failed",
            error="%s raised %s" % (stage, one_line(exc)),
            traceback=traceback.format_exc(),
        )
        return None
    return module, run, takes_context(run)


INT_RE = re.compile(r"[+-]?[0-9]+")
FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def natural(text):
    """A partition value as the user expects it: a number when it is one
    (plain decimal notation only: not "nan", "inf" or "1_000")."""
    if text is None:
        return None
    if INT_RE.fullmatch(text):
        return int(text)
    if FLOAT_RE.fullmatch(text):
        return float(text)
    return text


def format_regex(fmt):
    """Compiles a partition_format such as "{Store}/{file_name}.{extension}"
    into a regex and the column names of its placeholders."""
    names = []
    out = []
    pos = 0
    for m in re.finditer(r"\{([^{}:]+)(?::[^{}]*)?\}", fmt):
        out.append(re.escape(fmt[pos:m.start()]))
        name = m.group(1).strip()
        if name in names:
            out.append("(?P=g%d)" % names.index(name))
        else:
            out.append("(?P<g%d>[^/]+)" % len(names))
            names.append(name)
        pos = m.end()
    out.append(re.escape(fmt[pos:]))
    return re.compile("".join(out)), names


def read_part(pd, part, read, keys):
    path = part["path"]
    data = b""
    with open(path, "rb") as f:
        if part.get("header"):
            hpath = part.get("header_path") or path
            with open(hpath, "rb") as hf:
                data = hf.read(int(part.get("header_length") or 0))
        f.seek(int(part.get("offset") or 0))
        length = int(part.get("length") or 0)
        data += f.read(length) if length > 0 else f.read()
    encoding = read.get("encoding") or "utf8"
    kwargs = dict(
        sep=read.get("delimiter") or ",",
        encoding=ENCODINGS.get(encoding.lower().replace("-", ""), encoding),
    )
    if (read.get("header") or "all_files_same_headers") == "no_header":
        kwargs["header"] = None
    if keys:
        kwargs["dtype"] = {k: str for k in keys}
    try:
        frame = pd.read_csv(io.BytesIO(data), **kwargs)
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    except Exception as exc:
        raise LoadError("cannot parse %s: %s" % (path, one_line(exc)))
    if kwargs.get("header", 0) is None:
        frame.columns = ["Column%d" % (i + 1) for i in range(len(frame.columns))]
    return frame


def add_path_columns(frame, part, read, fmt):
    root = read.get("root") or ""
    rel = os.path.relpath(part["path"], root) if root else part["path"]
    rel = rel.replace(os.sep, "/")
    if fmt is not None:
        regex, names = fmt
        m = regex.fullmatch(rel)
        if m is None:
            raise LoadError(
                "file %s does not match partition_format %r: check "
                "extract_columns_from_partition_format in the MLTable file"
                % (rel, read.get("partition_format"))
            )
        for i, name in enumerate(names):
            frame[name] = m.group("g%d" % i)
    if read.get("include_path_column"):
        frame["Path"] = rel
    return frame


def load_table(table):
    import pandas as pd

    read = table.get("read") or {}
    keys = table.get("partition_keys") or []
    values = table.get("partition_values") or []
    fmt = format_regex(read["partition_format"]) if read.get("partition_format") else None
    frames = []
    for part in table.get("parts") or []:
        try:
            frame = read_part(pd, part, read, keys)
        except OSError as exc:
            raise LoadError("cannot read %s: %s" % (part.get("path"), one_line(exc)))
        frame = add_path_columns(frame, part, read, fmt)
        for key, value in zip(keys, values):
            if key not in frame.columns:
                raise LoadError(
                    "partition key %r is not a column of %s (columns: %s)"
                    % (key, part["path"], ", ".join(map(str, frame.columns)))
                )
            frame = frame[frame[key].astype(str) == value]
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    for key, value in zip(keys, values):
        if key in df.columns and not isinstance(natural(value), str):
            try:
                df[key] = pd.to_numeric(df[key])
            except (TypeError, ValueError):
                pass  # the column keeps its text
    drop = [c for c in read.get("drop_columns") or [] if c in df.columns]
    if drop:
        df = df.drop(columns=drop)
    keep = read.get("keep_columns")
    if keep:
        df = df[[c for c in keep if c in df.columns]]
    return df, {k: natural(v) for k, v in zip(keys, values)}


def count(result):
    """How many results run() returned; None when it returned a non-list."""
    if result is None:
        return 0
    if isinstance(result, (str, bytes)) or not hasattr(result, "__len__"):
        return None
    return len(result)


def write_result(path, result):
    """Writes run()'s result to path; returns its format: "csv" (a DataFrame,
    with a header) or "lines" (one item a line)."""
    tmp = path + ".tmp"
    if result is None:
        result = []
    fmt = "lines"
    if hasattr(result, "to_csv") and "pandas" in sys.modules:
        result.to_csv(tmp, index=False, header=True)
        fmt = "csv"
    else:
        with open(tmp, "w", encoding="utf-8") as f:
            for item in result:
                f.write(str(item))
                f.write("\n")
    os.replace(tmp, path)
    return fmt


def run_batch(req, run, with_context, events, logger):
    ident = req.get("id")
    t0 = time.perf_counter()
    try:
        if req.get("table") is not None:
            batch, keys = load_table(req["table"])
        else:
            batch, keys = list(req.get("files") or []), {}
    except Exception as exc:
        kind = "load_failed"
        events.send(ev="failed", id=ident, kind=kind, error="loading the mini-batch failed: "
                    + (str(exc) if isinstance(exc, LoadError) else one_line(exc)),
                    traceback="" if isinstance(exc, LoadError) else traceback.format_exc())
        return
    items = len(batch)
    events.send(ev="loaded", id=ident, items=items)
    t1 = time.perf_counter()
    try:
        if with_context:
            result = run(batch, MiniBatchContext(ident, keys))
        else:
            result = run(batch)
    except Exception as exc:
        events.send(ev="failed", id=ident, kind="raised", items=items,
                    error="run() raised " + one_line(exc), traceback=traceback.format_exc())
        return
    t2 = time.perf_counter()
    returned = count(result)
    if returned is None:
        events.send(ev="failed", id=ident, kind="raised", items=items,
                    error="run() returned a %s: return a list or a pandas DataFrame with one "
                    "element per successful item" % type(result).__name__, traceback="")
        return
    path = req.get("result_path")
    fmt = ""
    if path and returned >= items:
        try:
            fmt = write_result(path, result)
        except Exception as exc:
            events.send(ev="failed", id=ident, kind="raised", items=items,
                        error="writing run()'s result to %s failed: %s" % (path, one_line(exc)),
                        traceback=traceback.format_exc())
            return
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("mini-batch %s: %d items, %d results in %.3fs", ident, items, returned, t2 - t1)
    events.send(ev="done", id=ident, items=items, returned=returned, load=t1 - t0, run=t2 - t1, format=fmt)


def shutdown(module, logger):
    fn = getattr(module, "shutdown", None)
    if not callable(fn):
        return 0
    try:
        fn()
    except Exception:
        logger.exception("shutdown() raised")
        traceback.print_exc()
        return 1
    return 0


def main():
    cfg = json.loads(sys.argv[1])
    os.set_inheritable(3, False)
    os.set_inheritable(4, False)
    requests = os.fdopen(3, "rb")
    events = Events(4)
    os.chdir(cfg["dir"])
    if cfg["dir"] not in sys.path:
        sys.path.insert(0, cfg["dir"])
    sys.argv = [cfg["script"]] + list(cfg.get("args") or [])
    logger = setup_logger(cfg)
    install_helper_module(cfg)
    started = start(cfg, events)
    if started is None:
        return 1
    module, run, with_context = started
    events.send(ev="ready", pid=os.getpid())
    while True:
        line = requests.readline()
        if not line:
            # porch closed the pipe: it stopped, so the process ends too.
            return shutdown(module, logger)
        req = json.loads(line)
        if req.get("op") == "shutdown":
            return shutdown(module, logger)
        run_batch(req, run, with_context, events, logger)


if __name__ == "__main__":
    sys.exit(main())
