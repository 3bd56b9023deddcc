"""Time analyze_sms / split_sms on typical bodies: ``python benchmarks/bench_encoding.py``.

The target is well under 20 µs for a 160-character GSM body, since it runs on every send.
"""

from __future__ import annotations

import timeit

from unified_messaging._encoding import analyze_sms, split_sms

CASES: dict[str, str] = {
    "gsm7 160": ("Merhaba, siparisiniz kargoya verildi. Takip no: 1234567890. " * 3)[:160],
    "gsm7 160 with €": ("Tutar 100€ {kod} " * 10)[:160],
    "gsm7 1600": "a" * 1600,
    "turkish 155": ("Şişli'de ığdır çok güzel, İstanbul " * 5)[:150],
    "turkish 1600": ("Şişli'de ığdır çok güzel, İstanbul " * 50)[:1600],
    "ucs2 70": "Здравствуйте" * 5,
    "ucs2 emoji 1600": ("Привет 😀 " * 200)[:1600],
}


def main() -> None:
    for name, text in CASES.items():
        for fn in (analyze_sms, split_sms):
            number = 20_000
            seconds = min(timeit.repeat(lambda: fn(text), number=number, repeat=5))  # noqa: B023
            print(f"{fn.__name__:12} {name:18} {seconds / number * 1e6:8.2f} µs")


if __name__ == "__main__":
    main()
