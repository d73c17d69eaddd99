"""Compilers and linkers: gcc/clang/javac/rustc diagnostics, ninja, ld, a tool's error."""

from __future__ import annotations

from landbot.triage.recognisers import compiler as rec

from .conftest import corpus, failures, found, kinds, pasted

NETDATA = "cpp/netdata-gcc-lto-always-inline.log"


def test_gcc_error_its_snippet_ninja_and_the_wrappers() -> None:
    # tests/triage/real/cpp/netdata-gcc-lto-always-inline.log, 3435-3462.
    got = kinds(rec.ECOSYSTEM, corpus(NETDATA, 3435, 3462))
    assert got[3435] == "ninja-failed" and got[3438] == "compiler-error"
    assert got[3439] == "compiler-snippet"
    assert got[3462] == "tool-wrapper"  # `collect2: error: ld returned 1 exit status`
    assert 3462 not in failures(rec.ECOSYSTEM, corpus(NETDATA, 3435, 3462))


def test_warnings_are_not_marked() -> None:
    # Control: netdata lines 2311 and 2314 (`…: warning: 'always_inline' function …`).
    assert kinds(rec.ECOSYSTEM, corpus(NETDATA, 2311, 2314)) == {}


def test_snippet_past_an_interleaved_line() -> None:
    # tests/triage/real/cpp/duckdb-clang-tidy-narrowing.log, 498-501.
    got = kinds(rec.ECOSYSTEM, corpus("cpp/duckdb-clang-tidy-narrowing.log", 498, 501))
    assert got[498] == "compiler-error" and got[500] == "compiler-snippet"


def test_linker_undefined_reference_and_its_function() -> None:
    # tests/triage/real/cpp/kernel-aarch64-ld-undefined-qtaguid-debug-mask.log, 11812-11813.
    log = "cpp/kernel-aarch64-ld-undefined-qtaguid-debug-mask.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 11812, 11813))
    assert got == {11812: "linker-context", 11813: "linker-error"}


def test_a_tool_error_under_a_build_tool_timer() -> None:
    # tests/triage/real/cpp/firefox-windows-llvm-rc-missing-icon.log, 9629-9630 (mach's
    # `131:32.79 ` prefix).
    log = "cpp/firefox-windows-llvm-rc-missing-icon.log"
    got = kinds(rec.ECOSYSTEM, corpus(log, 9629, 9630))
    assert got == {9629: "tool-error", 9630: "tool-error-detail"}


def test_rustc_error_takes_its_location() -> None:
    # tests/triage/real/rust/uv-cargo-build-e0593.log, 358-359.
    from .conftest import found

    got = found(rec.ECOSYSTEM, corpus("rust/uv-cargo-build-e0593.log", 358, 359))
    assert got[358] == ("compiler-error", "crates/uv/src/commands/build_frontend.rs:450:54")


def test_msvc_diagnostic() -> None:
    # A vcpkg build error pasted in a stored public file (the code index's file id
    # 36910459544; it names no repository): MSVC's `path(line): error C2065: …`, with a
    # path holding parentheses.
    line = (
        r"C:\Program Files (x86)\Windows Kits\8.1\include\um\combaseapi.h(229): "
        "error C2065: “IUnknown”: 未声明的标识符"
    )
    got = found(rec.ECOSYSTEM, pasted(line))
    assert got[1][0] == "compiler-error" and got[1][1].endswith("combaseapi.h(229)")


ENGLISHAPP = "cpp/englishapp-flutter-ios-grpc-missing-template-arg.log"


def test_clang_indented_by_flutter_and_its_count() -> None:
    # tests/triage/real/cpp/englishapp-flutter-ios-grpc-missing-template-arg.log, 908-917:
    # flutter indents Xcode's output by four spaces; the `In file included from` chain
    # (908-913) is not marked, the error (914), its snippet and clang's count are.
    got = kinds(rec.ECOSYSTEM, corpus(ENGLISHAPP, 908, 917))
    assert got == {
        914: "compiler-error",
        915: "compiler-snippet",
        916: "compiler-snippet",
        917: "compiler-summary",
    }
    assert failures(rec.ECOSYSTEM, corpus(ENGLISHAPP, 908, 917)) == {
        914: "/Users/runner/work/englishapp/englishapp/ios/Pods/gRPC-Core/src/core/lib/"
        "promise/detail/basic_seq.h:103:38"
    }


def test_indented_warnings_and_their_count_are_not_marked() -> None:
    # Control: the same log, 834-853: clang warnings, notes and `2 warnings generated.`.
    assert kinds(rec.ECOSYSTEM, corpus(ENGLISHAPP, 834, 853)) == {}


def test_xcodebuild_and_flutter_verdicts_are_wrappers() -> None:
    # The same log, 823-826: `Failed to build iOS app`, `** BUILD FAILED **`.
    got = kinds(rec.ECOSYSTEM, corpus(ENGLISHAPP, 818, 826))
    assert got == {823: "build-failed", 826: "build-failed"}
    assert failures(rec.ECOSYSTEM, corpus(ENGLISHAPP, 818, 826)) == {}
    assert "build-failed" in rec.ECOSYSTEM.wrapper_kinds


def test_kotlin_errors() -> None:
    # tests/triage/real/java/radio-area-gradle-kotlin-unresolved-reference.log, 296-302:
    # kotlinc's `e: file:///…/LocationHelper.kt:72:30 Unresolved reference: cancel`.
    log = "java/radio-area-gradle-kotlin-unresolved-reference.log"
    got = failures(rec.ECOSYSTEM, corpus(log, 296, 302))
    base = (
        "/home/runner/work/Radio-area-partition-query/Radio-area-partition-query/app/src/"
        "main/java/com/example/radioarealocator/data/location/LocationHelper.kt"
    )
    assert got == {299: f"{base}:72:30", 300: f"{base}:78:22"}


def test_kotlin_warnings_are_not_marked() -> None:
    # Control: tests/triage/real/java/gradle-android-lint-missing-uses-feature.log,
    # 1480-1482: kotlinc's `w: file:///…` warnings.
    log = "java/gradle-android-lint-missing-uses-feature.log"
    assert kinds(rec.ECOSYSTEM, corpus(log, 1480, 1482)) == {}


def test_a_diagnostic_drawn_as_a_box() -> None:
    # tests/triage/real/docs/elasticsearch-docs-builder-broken-link.log, 451-479: the
    # docs-builder's `┌─[path]` location (454) and its `1 Errors / 0 Warnings` total; the
    # hints (462-475) are not marked.
    log = "docs/elasticsearch-docs-builder-broken-link.log"
    got = found(rec.ECOSYSTEM, corpus(log, 451, 479))
    path = "/github/workspace/docs/reference/elasticsearch/mapping-reference/sparse-vector.md"
    assert got == {454: ("compiler-location", path), 479: ("compiler-summary", "")}


def test_kotlin_errors_in_the_older_form() -> None:
    # kotlinc before 1.9: `e: /path/Main.kt: (12, 43): message`, as pasted in a stored
    # public file (the code index's file id 48782346983).
    line = (
        "e: /home/verlyn13/Projects/mcp-scope/mcp-project/mcp-core/src/main/kotlin/com/"
        "example/mcp/Main.kt: (12, 43): Unresolved reference: NatsConnection"
    )
    got = failures(rec.ECOSYSTEM, pasted(line))
    assert got == {
        1: "/home/verlyn13/Projects/mcp-scope/mcp-project/mcp-core/src/main/kotlin/com/"
        "example/mcp/Main.kt: (12, 43)"
    }


def test_cmake_error_and_configuring_incomplete() -> None:
    # CMake output pasted in a stored public file (the code index's file id 38803325265;
    # it names no repository).
    text = (
        "-- Found LLVM: /usr/lib/llvm-14/include 14.0.0 (Use LLVM_ROOT envronment variable"
        " for another version of LLVM)\n"
        "CMake Error at CMakeLists.txt:173 (message):\n"
        "  Unable to find clang libraries\n"
        "\n"
        "\n"
        "-- Configuring incomplete, errors occurred!"
    )
    got = found(rec.ECOSYSTEM, pasted(text))
    assert got == {2: ("cmake-error", "CMakeLists.txt:173"), 6: ("cmake-incomplete", "")}
    assert list(failures(rec.ECOSYSTEM, pasted(text))) == [2]


def test_cmake_warning_is_not_marked() -> None:
    # Control: a CMake warning pasted in a stored public file (file id 11307056895).
    text = (
        "CMake Warning at CMakeLists.txt:11 (find_package):\n"
        '  By not providing "FindQt5Widgets.cmake" in CMAKE_MODULE_PATH this project'
    )
    assert kinds(rec.ECOSYSTEM, pasted(text)) == {}
