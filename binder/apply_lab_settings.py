"""Apply the course's JupyterLab settings (jupyter/ in the repository) to the Python that runs this.

binder/postBuild runs it while repo2docker builds the image. It writes into
<sys.prefix>/etc/jupyter, the environment's own configuration folder, which
stays in the image even where a hub mounts each student's home folder over
the repository:

- labconfig/page_config.json: the lab's page settings (no news pop-up), merged
  into whatever the environment already has;
- jupyter_server_config.json: every section of jupyter/jupyter_server_config.json
  except ServerApp, whose settings (listening on 127.0.0.1, running as root)
  are for a laptop and would stop a hub from reaching the server; LabApp's
  default_url opens notebooks/00_start_here.ipynb;
- custom/ (if jupyter/ has one): JupyterLab's custom CSS, copied where
  jupyter_server looks for it whatever the home folder is.

Usage: python binder/apply_lab_settings.py
"""

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "jupyter"
LAPTOP_ONLY = {"ServerApp"}


def merge(base, extra):
    """``base`` updated with ``extra``, dictionaries merged key by key."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def merge_json(path, extra):
    path.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(json.dumps(merge(current, extra), indent=2) + "\n", encoding="utf-8")


def main(prefix=sys.prefix):
    target = Path(prefix) / "etc" / "jupyter"
    page = json.loads((SOURCE / "labconfig" / "page_config.json").read_text(encoding="utf-8"))
    merge_json(target / "labconfig" / "page_config.json", page)
    server = json.loads((SOURCE / "jupyter_server_config.json").read_text(encoding="utf-8"))
    merge_json(target / "jupyter_server_config.json", {k: v for k, v in server.items() if k not in LAPTOP_ONLY})
    if (SOURCE / "custom").is_dir():
        import jupyter_server
        static = Path(jupyter_server.__file__).parent / "static" / "custom"
        shutil.copytree(SOURCE / "custom", static, dirs_exist_ok=True)
    print(f"JupyterLab settings of the course applied in {target}")


if __name__ == "__main__":
    main()
