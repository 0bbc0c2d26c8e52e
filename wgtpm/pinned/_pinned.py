"""``wgtpm.open``: one module of the project's build list, read tensor by verified tensor.

>>> import wgtpm
>>> qwen = wgtpm.open("hf.co/Qwen/Qwen3-0.6B")        # doctest: +SKIP
>>> qwen.version                                       # from wgt.mod (MVS), bytes from wgt.sum
'v0.1.0'
>>> emb = qwen.tensor("model.embed_tokens.weight", dtype=torch.float32)
>>> block = qwen.tensors("model.layers.0.")            # {"self_attn.q_proj.weight": ..., ...}

The module is resolved exactly as a build step resolves it
(:func:`wgtpm.modload.open_resolver`): its version is the one the build list
of the package in ``project_dir`` selects, and its files are downloaded (if
not cached) and verified against wgt.sum. Every tensor read is then checked
against the sha256 of the module's tensor table (:func:`wgtpm.tensors.tables_for`)
before torch sees a byte (:func:`wgtpm.tensors.read_tensor_bytes`), so a
byte changed in the cache after the download is refused too. Nothing is
ever unpickled.

Where wgt.mod's ``select MODULE FILE#TENSOR`` lines leave a weights file out of the
download and the release's tables are h1-locked, a tensor of that file is read by
HTTP range instead, verified against the table before it is returned and kept in
the cache (:mod:`wgtpm.rangeread`), or, under ``-mod=vendor``, from
``vendor/MODULE/FILE#tensors/SHA256``. ``path`` then holds the selected files only
(without select lines: every file of the release); :meth:`Pinned.load` needs the
weights files whole.

This module imports no torch; :meth:`Pinned.tensor` and :meth:`Pinned.load` do.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import BuildError, ChecksumMismatchError, NotFoundError, UsageError
from .._fs import sha256_file
from ..deps import ModuleResolver, ResolvedModule
from ._origin import BaseIdentity, Origin, record, weights_sha256

if TYPE_CHECKING:
    import torch

    from ..tensors import FileTable, TensorInfo, TensorTables

__all__ = ["Pinned", "open_module"]


class Pinned:
    """One verified module version of the build list (see the module docstring).

    ``path`` is the module's read-only directory in the cache (or its local
    replacement directory); ``module`` and ``version`` name it.
    """

    def __init__(self, resolved: ResolvedModule, project_dir: Path | None = None) -> None:
        self._resolved = resolved
        self._tables: TensorTables | None = None
        self._project_dir = project_dir  # where a ranged read finds its fetcher (None: none)

    def __repr__(self) -> str:
        return f"<wgtpm Pinned {self.label} at {self.path}>"

    @property
    def path(self) -> Path:
        return self._resolved.dir

    @property
    def module(self) -> str:
        return self._resolved.path

    @property
    def version(self) -> str:
        return self._resolved.version

    @property
    def label(self) -> str:
        """``module@version`` (``module`` alone for a local directory replacement)."""
        return f"{self.module}@{self.version}" if self.version else self.module

    # ---- tables ---------------------------------------------------------

    @property
    def tables(self) -> TensorTables:
        """The module's tensor tables, one per ``.safetensors``/``.gguf`` file (computed once)."""
        if self._tables is None:
            from ..tensors import tables_for

            self._tables = tables_for(self._resolved)
        return self._tables

    @property
    def base(self) -> BaseIdentity:
        """The module's weights as one identity (see :func:`wgtpm.pinned.weights_sha256`)."""
        files = {path: table.sha256 for path, table in self.tables.files.items()}
        return BaseIdentity(self.module, self.version, weights_sha256(files))

    def _files(self, file: str | None) -> list[FileTable]:
        tables = self.tables.files
        if file is None:
            if not tables:
                raise NotFoundError(
                    self.module,
                    self.version,
                    "has no .safetensors or .gguf file to read tensors from",
                )
            return [tables[p] for p in sorted(tables)]
        if file not in tables:
            close = difflib.get_close_matches(file, list(tables), n=1)
            hint = (
                f"; did you mean {close[0]}?"
                if close
                else f"; its weights files: {', '.join(sorted(tables)) or 'none'}"
            )
            raise NotFoundError(self.module, self.version, f"has no weights file {file}{hint}")
        return [tables[file]]

    def _find(self, name: str, file: str | None) -> tuple[FileTable, TensorInfo]:
        candidates = self._files(file)
        found = [(t, info) for t in candidates for info in t.tensors if info.name == name]
        if len(found) > 1:
            where = ", ".join(t.path for t, _ in found)
            raise UsageError(
                f"{self.label}: tensor {name} is in several files ({where}); pass file= to pick one"
            )
        if found:
            return found[0]
        names = [info.name for t in candidates for info in t.tensors]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        files = ", ".join(t.path for t in candidates)
        raise NotFoundError(self.module, self.version, f"has no tensor {name} in {files}{hint}")

    # ---- tensors ----------------------------------------------------------

    def tensor(
        self, name: str, *, file: str | None = None, dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        """The tensor ``name``, its bytes checked against the tensor table first.

        ``file`` picks the weights file when several hold the name; ``dtype``
        converts it (``torch.float32``), and the conversion is recorded in
        its :class:`~wgtpm.pinned.Origin`. A tensor whose bytes disagree with
        the table raises :class:`~wgtpm.ChecksumMismatchError` and returns nothing.
        """
        table, info = self._find(name, file)
        return self._read(table, info, dtype)

    def tensors(
        self, prefix: str, *, file: str | None = None, dtype: torch.dtype | None = None
    ) -> dict[str, torch.Tensor]:
        """Every tensor whose name starts with ``prefix``, keyed by the rest of its name.

        ``qwen.tensors("model.layers.0.")`` -> ``{"self_attn.q_proj.weight": ..., ...}``;
        each is read as :meth:`tensor` reads one.
        """
        picked: dict[str, tuple[FileTable, TensorInfo]] = {}
        for table in self._files(file):
            for short, info in table.with_prefix(prefix).items():
                if short in picked:
                    raise UsageError(
                        f"{self.label}: tensor {prefix}{short} is in {picked[short][0].path} "
                        f"and {table.path}; pass file= to pick one"
                    )
                picked[short] = (table, info)
        if not picked:
            raise NotFoundError(
                self.module, self.version, f"has no tensor named {prefix}… in its weights files"
            )
        return {short: self._read(t, info, dtype) for short, (t, info) in sorted(picked.items())}

    def _bytes(self, table: FileTable, info: TensorInfo) -> bytes:
        """The verified bytes of ``info``: from the module's file when it is here, else
        (a ``select FILE#TENSOR`` line left the file out, and the release's tables are
        h1-locked) by HTTP range, kept in the cache (:mod:`wgtpm.rangeread`)."""
        from ..tensors import check_tensor_bytes, read_tensor_bytes

        local = self.path / table.path
        if local.is_file() or not self.version:
            return read_tensor_bytes(  # verified, or it raises
                local, info, module=self.module, version=self.version, file=table.path
            )
        # vendored by a FILE#TENSOR select (wgtpm.modload.vendor): checked again here
        vendored = self.path / f"{table.path}#tensors" / info.sha256
        if vendored.is_file():
            data = vendored.read_bytes()
            return check_tensor_bytes(
                data, info, table.path, module=self.module, version=self.version
            )
        return _ranged(self._project_dir, self.module, self.version, table, info)

    def _read(self, table: FileTable, info: TensorInfo, dtype: torch.dtype | None) -> torch.Tensor:
        from ._convert import from_bytes, tensor_sha256

        where = f"{self.label}/{table.path}#{info.name}"
        data = self._bytes(table, info)
        tensor = from_bytes(data, info.dtype, info.shape, table.format, where)
        converted = None
        if dtype is not None and dtype != tensor.dtype:
            tensor = tensor.to(dtype)
            converted = str(dtype).removeprefix("torch.")
        origin = Origin(
            self.module, self.version, table.path, info.name, info.sha256, info.dtype, converted
        )
        held = info.sha256 if converted is None else tensor_sha256(tensor)
        record(tensor, origin, held)
        return tensor

    # ---- whole models -----------------------------------------------------

    def verify_weights(self) -> None:
        """Re-hash every weights file against its table's sha256 (what :meth:`load` reads)."""
        for path, table in sorted(self.tables.files.items()):
            if not (self.path / path).is_file():
                raise NotFoundError(
                    self.module,
                    self.version,
                    f"{path} is not downloaded (a select line names only some of its tensors); "
                    "select the file whole to load the model",
                )
            got = sha256_file(self.path / path)
            if got != table.sha256:
                raise ChecksumMismatchError(
                    self.module, self.version, path, table.sha256, got, got_from="cached"
                )

    def load(self, **kw: Any) -> Any:
        """The module as a transformers model: ``AutoModelForCausalLM`` (or ``AutoModel``).

        Safetensors only (``use_safetensors=True``; nothing is unpickled), no
        remote code, local files only; the weights files are re-hashed against
        their tables first. ``kw`` goes to ``from_pretrained`` (``torch_dtype=``...).
        The model gets ``model._wgtpm_base``, the :class:`BaseIdentity` adapters check.
        """
        if kw.get("trust_remote_code"):
            raise UsageError(
                f"{self.label}: trust_remote_code runs code from the module; wgtpm loads weights only"
            )
        try:
            import transformers
        except ImportError as exc:
            raise UsageError(
                f"Pinned.load needs transformers: pip install transformers ({exc})"
            ) from exc
        self.verify_weights()
        args: dict[str, Any] = {
            **kw,
            "use_safetensors": True,
            "local_files_only": True,
            "trust_remote_code": False,
        }
        model: Any
        try:
            try:
                model = transformers.AutoModelForCausalLM.from_pretrained(str(self.path), **args)
            except ValueError:  # not a causal LM architecture: the bare model
                model = transformers.AutoModel.from_pretrained(str(self.path), **args)
        except (OSError, ValueError, TypeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise BuildError(f"{self.label}: transformers cannot load it ({first})") from exc
        model._wgtpm_base = self.base
        return model


def open_module(
    path: str, *, project_dir: str | Path = ".", resolver: ModuleResolver | None = None
) -> Pinned:
    """The build list's version of module ``path``, downloaded and verified (see the module docstring).

    ``resolver`` replaces the build list of ``project_dir`` (a build step's own, tests).
    """
    if "@" in path:
        raise UsageError(
            f"{path}: wgtpm.open takes a module path without a version; "
            "the version comes from wgt.mod (change it with 'wgtpm get MODULE@VERSION')"
        )
    if resolver is not None:
        return Pinned(resolver.module(path.rstrip("/")))
    from ..modload import open_resolver

    with open_resolver(Path(project_dir)) as own:
        return Pinned(own.module(path.rstrip("/")), Path(project_dir))


def _ranged(
    project_dir: Path | None, module: str, version: str, table: FileTable, info: TensorInfo
) -> bytes:
    """Tensor ``info`` of ``module@version``'s ``table.path``, which is not downloaded: the
    cache's verified copy, else by range through the project's fetcher (the module's
    origin: a module replacement's files come from another path)."""
    from ..modfetch import Fetcher
    from ..modload.buildlist import Fetched
    from ..modload.options import Options
    from ..modload.project import Project
    from ..module import ModuleVersion
    from ..rangeread import fetch_tensor

    if project_dir is None:
        raise NotFoundError(
            module,
            version,
            f"{table.path} is not downloaded; run 'wgtpm get {module}' (or select the file)",
        )
    with Project.load(project_dir, Options.from_env(default="readonly")) as project:
        if project.opts.vendor:
            raise NotFoundError(
                module,
                version,
                f"tensor {info.name} of {table.path} is not vendored; "
                "select it and run 'wgtpm vendor', or build without -mod=vendor",
            )
        origin = project.origin(ModuleVersion(module, version))
        if not isinstance(origin, Fetched):
            raise NotFoundError(module, version, f"{table.path} is not in the module's directory")
        fetcher: Fetcher = project.fetcher()
        return fetch_tensor(fetcher, origin.path, origin.version, table, info)
