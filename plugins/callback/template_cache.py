"""Ansible callback: compile each Jinja template once per run, not once per worker.

Why (issue 25, docs/fleet.md "Compiled templates, once per run"): ansible-core 2.19 keeps no
compiled templates. Every ``{{ }}`` a task, a conditional or a lazy role variable reads is
parsed, turned into Python and compiled again, in every forked worker, for every host. On a
no-change rerun of the lab rack that was 39 % of the workers' CPU (4,360 compiles of 358
distinct templates for 4 hosts, 3.3 CPU-s per host). A worker's work dies with it, so an
in-memory cache alone would only help the one process that filled it.

What it does: it wraps Jinja's ``Environment.compile`` (templates) and ``compile_expression``
(conditionals) of ansible-core's ``AnsibleEnvironment`` with a cache of the compiled Python
code, in memory and in a directory inside ansible's own per-run local temporary directory
(mode 0700, removed when the run ends), which every worker forked from the run shares. Only the
compile step is cached, keyed by the template's source and every setting that changes what it
compiles to (delimiters, whitespace and newline handling, extensions, optimizer, autoescape,
finalize, ansible's backslash escaping and embedded-template settings). Rendering, variables,
trust checks and errors are untouched: a template that does not compile is never cached and
fails as before. Template files rendered through a loader (the template module, includes)
are not cached. No rendered value is written: only code compiled from the playbooks' and
inventories' own template text.

When the ansible-core or Jinja it runs with do not have the internals this relies on (checked
when the run starts), it says so once and stays off; the run is unchanged apart from speed.
"""

from __future__ import annotations

DOCUMENTATION = """
    name: template_cache
    type: aggregate
    short_description: compile each Jinja template once per run, shared by every worker
    description:
      - Caches the compiled code of inline templates and conditionals in memory and in a
        directory inside ansible's per-run local temporary directory, so forked workers reuse
        what any process of the run compiled instead of compiling it again.
      - Only compilation is cached, keyed by the template text and every compile setting;
        rendering, trust checks and errors are unchanged.
      - Stays off, with one warning, when ansible-core or Jinja lack the internals it wraps.
    requirements:
      - ansible-core 2.19 with Jinja 3.1
"""

import contextlib
import contextvars
import hashlib
import marshal
import os
import re
import tempfile
from types import CodeType

from ansible import constants as C
from ansible.plugins.callback import CallbackBase

#: Environment attributes that change what Jinja compiles a source into.
_COMPILE_FIELDS = (
    "block_start_string",
    "block_end_string",
    "variable_start_string",
    "variable_end_string",
    "comment_start_string",
    "comment_end_string",
    "line_statement_prefix",
    "line_comment_prefix",
    "trim_blocks",
    "lstrip_blocks",
    "newline_sequence",
    "keep_trailing_newline",
    "optimized",
    "autoescape",
    "is_async",
)
#: Names a template may use as a filter (``| name``), a test (``is [not] name``) or a lookup
#: (``lookup('name'`` / ``query(`` / ``q(``): loaded once in the main process, so that forked
#: workers do not each find, read and compile the plugin's file again.
_PLUGIN_NAMES = re.compile(
    r"\|\s*(?P<filter>[A-Za-z_][\w.]*)"
    r"|\bis\s+(?:not\s+)?(?P<test>[A-Za-z_][\w.]*)"
    r"|\b(?:lookup|query|q)\(\s*['\"](?P<lookup>[A-Za-z_][\w.]*)['\"]"
)
#: The memory side holds at most this many entries per process (then starts again).
MAX_ENTRIES = 8192

# The expression compile_expression is compiling, so that compile() files its code under it.
_expression_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "racksmith_template_cache_expression", default=None
)


class CompileCache:
    """Compiled code by key, in memory and in ``directory`` (shared by forked processes)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.memory: dict[str, CodeType] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CodeType | None:
        code = self.memory.get(key)
        if code is None:
            try:
                with open(os.path.join(self.directory, key), "rb") as f:
                    code = marshal.load(f)  # noqa: S302 (this run's own 0700 directory)
            except (OSError, EOFError, ValueError, TypeError):
                code = None  # absent, or being written: compile it
            if not isinstance(code, CodeType):
                self.misses += 1
                return None
            self._remember(key, code)
        self.hits += 1
        return code

    def put(self, key: str, code: CodeType) -> None:
        self._remember(key, code)
        try:  # written whole under another name, then renamed: a reader never sees half
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                marshal.dump(code, f)
            os.replace(tmp, os.path.join(self.directory, key))
        except OSError:
            pass  # the memory side still has it; another process compiles its own

    def _remember(self, key: str, code: CodeType) -> None:
        if len(self.memory) >= MAX_ENTRIES:
            self.memory.clear()
        self.memory[key] = code


def compile_key(
    env, kind: str, source: str, escape_backslashes: bool | None, embedded: bool
) -> str:
    """A file-name-safe key: the source and every setting that changes its compiled code."""
    settings = [type(env).__module__, type(env).__qualname__, kind, escape_backslashes, embedded]
    settings += [repr(getattr(env, name, None)) for name in _COMPILE_FIELDS]
    settings += sorted(getattr(env, "extensions", {}))
    finalize = getattr(env, "finalize", None)
    settings.append(getattr(finalize, "__qualname__", repr(finalize)))
    settings.append(getattr(env.code_generator_class, "__qualname__", ""))
    text = "\0".join(str(part) for part in settings) + "\0\0" + source
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def strings(value, depth: int = 0):
    """Every string inside ``value`` (dicts' keys and values, lists, tuples), depth-bounded."""
    if isinstance(value, str):
        yield value
    elif depth < 32 and isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key, depth + 1)
            yield from strings(item, depth + 1)
    elif depth < 32 and isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item, depth + 1)


class Prewarm:
    """Compiles, in the run's main process, what the workers of a task are about to compile.

    Workers of one task start together (one per host), so without this every one of them
    misses the cache at once; compiled here first, each fork inherits it in memory."""

    def __init__(self):
        from ansible._internal._templating._engine import TemplateEngine, TemplateOptions
        from ansible._internal._templating._jinja_bits import is_possibly_template

        self.engine = TemplateEngine()
        self.template_options = TemplateOptions.DEFAULT
        # how a conditional is compiled (TemplateEngine._normalize_and_evaluate_conditional)
        self.expression_options = TemplateOptions(
            escape_backslashes=False, preserve_trailing_newlines=False
        )
        self.is_possibly_template = is_possibly_template
        self.seen: set[tuple[bool, str]] = set()
        self.plugins: set[tuple[str, str]] = set()

    def load_plugins(self, text: str) -> None:
        """Load the filter, test and lookup plugins ``text`` names (unknown names are skipped)."""
        from ansible.plugins.loader import lookup_loader

        environment = self.engine.environment
        for match in _PLUGIN_NAMES.finditer(text):
            kind = match.lastgroup
            name = match.group(kind)
            if (kind, name) in self.plugins:
                continue
            self.plugins.add((kind, name))
            with contextlib.suppress(Exception):  # not a plugin, or a broken one: the worker says
                if kind == "filter":
                    environment.filters[name]
                elif kind == "test":
                    environment.tests[name]
                else:
                    lookup_loader.get(name)

    def templates(self, value) -> None:
        for text in strings(value):
            if (False, text) not in self.seen and self.is_possibly_template(text):
                self.seen.add((False, text))
                with contextlib.suppress(Exception):  # a worker meets it and reports it
                    self.engine._compile_template(text, self.template_options)
                    self.load_plugins(text)

    def conditionals(self, value) -> None:
        for text in strings(value):
            text = text.strip()
            if text and (True, text) not in self.seen:
                self.seen.add((True, text))
                with contextlib.suppress(Exception):  # a worker meets it and reports it
                    self.engine._compile_expression(text, self.expression_options)
                    self.load_plugins(text)


def install(directory: str) -> CompileCache:
    """Wrap ansible-core's AnsibleEnvironment with a compile cache in ``directory``.
    Raises ImportError or AttributeError when the internals it wraps are not there."""
    from ansible._internal._templating import _jinja_bits, _jinja_common
    from jinja2 import __version__ as jinja_version
    from jinja2 import nodes
    from jinja2.environment import TemplateExpression

    if not jinja_version.startswith("3.1."):
        raise ImportError(f"Jinja {jinja_version}, not 3.1")
    env_class = _jinja_bits.AnsibleEnvironment
    compile_context = _jinja_bits._TemplateCompileContext
    config = _jinja_common._TemplateConfig
    getattr(config, "allow_embedded_templates")  # noqa: B009 (fail now, not on first use)
    if getattr(env_class, "_racksmith_cache", None) is not None:
        env_class._racksmith_cache.directory = directory
        return env_class._racksmith_cache

    cache = CompileCache(directory)
    plain_compile = env_class.compile
    plain_compile_expression = env_class.compile_expression

    def key_for(env, kind: str, source: str) -> str:
        context = compile_context.current(optional=True)
        escape = context.escape_backslashes if context is not None else None
        return compile_key(env, kind, source, escape, config.allow_embedded_templates)

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        plain = name is None and filename is None and not raw and not defer_init
        key = None
        if plain and isinstance(source, str):
            key = key_for(self, "template", source)
            if (code := cache.get(key)) is not None:
                return code
        elif plain and isinstance(source, nodes.Template):
            key = _expression_key.get()  # compile_expression below looked it up already
        code = plain_compile(self, source, name, filename, raw, defer_init)
        if key is not None and isinstance(code, CodeType):
            cache.put(key, code)
        return code

    def compile_expression(self, source, undefined_to_none=True):
        key = key_for(self, f"expression:{bool(undefined_to_none)}", source)
        code = cache.get(key)
        if code is not None:  # what Environment.compile_expression builds from its code
            template = self.template_class.from_code(self, code, self.make_globals(None), None)
            return TemplateExpression(template, undefined_to_none)
        token = _expression_key.set(key)
        try:
            return plain_compile_expression(self, source, undefined_to_none)
        finally:
            _expression_key.reset(token)

    env_class.compile = compile
    env_class.compile_expression = compile_expression
    env_class._racksmith_cache = cache
    return cache


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "racksmith.core.template_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        directory = os.path.join(C.DEFAULT_LOCAL_TMP, "racksmith-templates")
        self._cache: CompileCache | None = None
        self._prewarm: Prewarm | None = None
        self._roles: set[int] = set()
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            self._cache = install(directory)
            self._prewarm = Prewarm()
        except (ImportError, AttributeError, OSError) as exc:
            self._display.warning(
                f"racksmith.core.template_cache is off, templates compile per worker: {exc}"
            )

    def v2_playbook_on_play_start(self, play):
        """The play's variables as one host of it sees them: inventory, group_vars, play vars."""
        if self._prewarm is None:
            return
        try:
            manager = play.get_variable_manager()
            hosts = manager._inventory.get_hosts(play.hosts)
            variables = manager.get_vars(
                play=play, host=hosts[0] if hosts else None, include_hostvars=False
            )
        except Exception:  # only a cache: the workers compile what this misses
            return
        self._prewarm.templates(variables)

    def v2_playbook_on_task_start(self, task, is_conditional):
        """The task's own templates and conditionals, and once per role its variables."""
        if self._prewarm is None:
            return
        prewarm = self._prewarm
        try:
            role = getattr(task, "_role", None)
            if role is not None and id(role) not in self._roles:
                self._roles.add(id(role))
                prewarm.templates(role.get_default_vars())
                prewarm.templates(role.get_vars(include_params=True))
            prewarm.templates(task.get_ds())
            if task.loop is not None or task.loop_with:  # a loop's default item label
                loop_var = getattr(task.loop_control, "loop_var", None) or "item"
                prewarm.templates("{{" + loop_var + "}}")
            prewarm.conditionals([task.when, task.changed_when, task.failed_when, task.until])
        except Exception:  # only a cache: the workers compile what this misses
            return

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        cache = self._cache
        if cache is not None:
            try:
                shared = len([n for n in os.listdir(cache.directory) if not n.startswith(".")])
            except OSError:
                shared = 0
            self._display.vv(
                f"template_cache: {shared} templates compiled for the run's workers;"
                f" this process: {cache.hits} reused, {cache.misses} compiled"
            )
