"""PAW programs: the ``.paw`` bundle, compile-by-training, and handing programs to the PAW SDK.

A PAW program (ProgramAsWeights) is a natural-language spec compiled into a
LoRA adapter for a small Qwen3 interpreter, shipped as a ``.paw`` ZIP and run
by the ``programasweights`` SDK through llama.cpp.

- :mod:`~wgtpm.paw.bundle` reads and writes the ZIP (byte-stable);
  :mod:`~wgtpm.paw.validate` checks every rule of the SDK and the adapter's
  fit to its base model; :mod:`~wgtpm.paw.identity` derives the program ID.
- :mod:`~wgtpm.paw.spec` parses ``.pawspec``; :func:`build_program` compiles
  one the compile-by-training way (the mapper stage of :mod:`~wgtpm.paw.mapper`,
  examples from JSONL or teachers, compile.py's recipe, GGUF adapter);
  ``wgtpm paw compile`` is compile.py's command line over the same builder.
- :func:`run_program` runs a bundle in pure Python; :mod:`~wgtpm.paw.sdk`
  installs one into the SDK's cache for offline use.

Importing this package loads neither numpy nor torch nor transformers nor gguf
(tests/test_light_imports.py keeps it so).
"""

from .build import build_program
from .bundle import Bundle, BundleError, read_bundle, write_bundle
from .identity import program_id
from .run import load_program, run_program
from .sdk import InstalledProgram, install_artifact, install_program, sdk_cache_dir
from .shape import InterpreterShape
from .spec import PawSpec, Recipe, RuntimeSpec, TeacherModel, TeacherSpec, load_spec, parse_spec
from .validate import ValidProgram, check_bundle, validate_file

__all__ = [
    "Bundle",
    "BundleError",
    "InstalledProgram",
    "InterpreterShape",
    "PawSpec",
    "Recipe",
    "RuntimeSpec",
    "TeacherModel",
    "TeacherSpec",
    "ValidProgram",
    "build_program",
    "check_bundle",
    "install_artifact",
    "install_program",
    "load_program",
    "load_spec",
    "parse_spec",
    "program_id",
    "read_bundle",
    "run_program",
    "sdk_cache_dir",
    "validate_file",
    "write_bundle",
]
