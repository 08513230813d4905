"""The labelled set of bench/calibration_bundled.py: the VADER sentiment lexicon out of the PyPI wheel
vaderSentiment==3.3.2 (MIT licence, C.J. Hutto), fetched with ``pip download --no-deps`` when missing, its
SHA-256 checked, read out of the zip (never imported nor installed), and a seeded, balanced sample of words
rated clearly positive or negative."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE, VERSION = "vaderSentiment", "3.3.2"
WHEEL = f"{PACKAGE}-{VERSION}-py2.py3-none-any.whl"
WHEEL_SHA256 = "3bf1d243b98b1afad575b9f22bc2cb1e212b94ff89ca74f8a23a588d024ea311"  # PyPI's file, 125,950 bytes
LEXICON = "vaderSentiment/vader_lexicon.txt"
THRESHOLD = 1.5  # |mean rating| at least this: a clearly positive or negative word
WORD = re.compile(r"[a-z](?:[a-z'-]*[a-z])?")


# -- the labelled set ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    word: str
    mean: float  # the mean of the raters' valence, -4 to +4
    sd: float


@dataclass
class Lexicon:
    entries: list[Entry]
    licence: str  # the wheel's METADATA License field
    licence_line: str  # the first lines of its LICENSE.txt (the licence's name and the copyright)
    wheel: Path
    sha256: str


@dataclass(frozen=True)
class Word:
    text: str
    positive: bool
    mean: float


def default_cache() -> Path:
    base = os.environ.get("DECISIONS_GATEWAY_CACHE") or os.path.join("~", ".cache", "decisions-gateway")
    return Path(base).expanduser() / "datasets"


def sha256_of(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fetch_wheel(cache: Path, sha256: str = WHEEL_SHA256) -> Path:
    """The vaderSentiment wheel in ``cache``, downloaded from the package index (``pip download``) when it is
    missing; a file whose SHA-256 is not ``sha256`` is refused, downloaded or not."""
    path = cache / WHEEL
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"the labelled set is not in {cache}: downloading {PACKAGE}=={VERSION} "
              "(pip download --no-deps; the package is only unzipped, never installed)", flush=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            done = subprocess.run([sys.executable, "-m", "pip", "download", f"{PACKAGE}=={VERSION}", "--no-deps",
                                   "--only-binary=:all:", "--disable-pip-version-check", "-d", tmp],
                                  capture_output=True, text=True, timeout=300)
            got = Path(tmp) / WHEEL
            if done.returncode != 0 or not got.is_file():
                raise RuntimeError(f"pip download {PACKAGE}=={VERSION} failed ({done.returncode}):\n"
                                   f"{(done.stdout + done.stderr)[-2000:]}")
            shutil.move(str(got), path)
        print(f"saved {path}", flush=True)
    found = sha256_of(path)
    if found != sha256:
        raise RuntimeError(f"{path}: SHA-256 {found}, not the {sha256} of {PACKAGE} {VERSION} on PyPI; "
                           "delete it to download it again")
    return path


def read_wheel(path: Path) -> Lexicon:
    """The lexicon and the licence, read out of the wheel (a zip) without importing it."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        licence = next((line.split(":", 1)[1].strip() for line in z.read(metadata).decode("utf-8").splitlines()
                        if line.startswith("License:")), "")
        licence_file = next((n for n in names if ".dist-info/" in n and "LICEN" in n.rsplit("/", 1)[-1].upper()),
                            None)
        head = [line.strip() for line in z.read(licence_file).decode("utf-8").splitlines() if line.strip()][:2] \
            if licence_file else []
        text = z.read(LEXICON).decode("utf-8")
    entries = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3:
            entries.append(Entry(parts[0], float(parts[1]), float(parts[2])))
    return Lexicon(entries, licence, "; ".join(head), path, sha256_of(path))


def candidates(lexicon: Lexicon, threshold: float = THRESHOLD) -> tuple[list[Entry], list[Entry]]:
    """(positive, negative) words: letters only (``'`` or ``-`` inside), rated at least ``threshold`` either way."""
    words = [e for e in lexicon.entries if WORD.fullmatch(e.word)]
    return [e for e in words if e.mean >= threshold], [e for e in words if e.mean <= -threshold]


def labelled(lexicon: Lexicon, count: int, fresh: int, seed: int) -> tuple[list[Word], list[Word]]:
    """A balanced sample of ``count`` words (half positive, half negative) and ``fresh`` more, none in both;
    each list in a seeded random order."""
    positive, negative = candidates(lexicon)
    rng = random.Random(seed)
    rng.shuffle(positive)
    rng.shuffle(negative)
    need = (count + 1) // 2 + (fresh + 1) // 2
    if need > min(len(positive), len(negative)):
        raise ValueError(f"{count} + {fresh} balanced words need {need} of each side; the lexicon has "
                         f"{len(positive)} positive and {len(negative)} negative ones")

    def take(n: int, offset: int) -> list[Word]:
        half = n // 2
        words = [Word(e.word, True, e.mean) for e in positive[offset:offset + n - half]]
        words += [Word(e.word, False, e.mean) for e in negative[offset:offset + half]]
        rng.shuffle(words)
        return words

    first = take(count, 0)
    return first, take(fresh, (count + 1) // 2)
