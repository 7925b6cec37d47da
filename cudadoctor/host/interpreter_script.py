"""The script the target interpreter runs to say what it is (RealHost.interpreter)."""

# Run inside the target interpreter; stdlib only and no newer syntax, so that any Python 3
# answers. (Python 2 rejects the -I flag: it is reported as not answering.)
INTERPRETER_SCRIPT = r"""
import json, os, sys, sysconfig
paths = []
for key in ("purelib", "platlib"):
    try:
        p = sysconfig.get_paths()[key]
    except Exception:
        p = None
    if p and p not in paths:
        paths.append(p)
try:
    import site
    user_site = site.getusersitepackages()
    if os.path.isdir(user_site):
        paths.append(user_site)
except Exception:
    pass
for p in sys.path:
    if p and p.rstrip("/\\").endswith(("site-packages", "dist-packages")) and p not in paths:
        paths.append(p)
print(json.dumps({
    "executable": sys.executable,
    "version": sys.version.split()[0],
    "implementation": sys.implementation.name.lower(),
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "platform_tag": sysconfig.get_platform(),
    "site_packages": paths,
    "conda_prefix_env": os.environ.get("CONDA_PREFIX"),
}))
"""
