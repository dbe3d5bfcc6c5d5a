#pragma once
// Root ignores file modes: a test of a folder or a file the process may not write
// proves nothing as root. Such a test starts with SW_AS_UNPRIVILEGED_USER(): run
// by root, it runs that one test function again in a child of this test binary
// as the user `nobody` and takes the child's verdict; run by anyone else (or in
// that child) it goes on here. It is skipped, with the reason, where the child
// cannot be started.

#include <QString>
#include <QTest>

namespace sw::test {

struct UnprivilegedRun {
    bool ranInChild = false; // root: the test function ran in the child
    bool passed = false;     // and passed there
    QString output;          // the child's output, for a failure
    QString skipReason;      // non-empty: skip here
};

// The current test function (and data row) run again as `nobody` when this process is root.
UnprivilegedRun runAsUnprivilegedUser();

} // namespace sw::test

#define SW_AS_UNPRIVILEGED_USER()                                                                                      \
    do {                                                                                                               \
        const sw::test::UnprivilegedRun unprivileged_ = sw::test::runAsUnprivilegedUser();                             \
        if (!unprivileged_.skipReason.isEmpty())                                                                       \
            QSKIP(qPrintable(unprivileged_.skipReason));                                                               \
        if (unprivileged_.ranInChild) {                                                                                \
            QVERIFY2(unprivileged_.passed, qPrintable(unprivileged_.output));                                          \
            return;                                                                                                    \
        }                                                                                                              \
    } while (false)
