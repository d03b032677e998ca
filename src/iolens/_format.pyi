# Type stub for the generated module iolens._format (written at build time by native/tools/gen_format.c from
# native/include/iolens_format.h; not in the source tree of a clean checkout). Its tables are plain data.
from typing import Any

def __getattr__(name: str) -> Any: ...
