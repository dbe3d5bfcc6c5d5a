// The process allocator the product is built with: mimalloc, linked so that the dynamic linker
// resolves malloc/free/operator new to it for every library in the process, Qt's included (an
// allocation made inside libQt6Core lands in mimalloc's heap). Sanitizer builds keep their own
// allocator and skip.

#include <QByteArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QTest>

#include <cstdlib>
#include <memory>
#include <string>

#ifdef SWITCHMAN_MIMALLOC
#include <mimalloc.h>
#endif

class TestAllocator : public QObject {
    Q_OBJECT

private slots:
    void everyAllocationInTheProcessIsMimallocs() {
#ifndef SWITCHMAN_MIMALLOC
        QSKIP("built without mimalloc (a sanitizer build keeps its own allocator)");
#else
        auto *fromC = static_cast<char *>(std::calloc(96, 1));
        QVERIFY(fromC);
        QVERIFY(mi_is_in_heap_region(fromC));
        std::free(fromC);
        auto fromNew = std::make_unique<std::string>(200, 'x');
        QVERIFY(mi_is_in_heap_region(fromNew->data()));
        // Allocated inside libQt6Core, freed there too.
        const QByteArray bytes(4096, 'b');
        QVERIFY(mi_is_in_heap_region(bytes.constData()));
        const QString text = QString::number(12345) + QStringLiteral(" tokens");
        QVERIFY(mi_is_in_heap_region(text.constData()));
        const QByteArray json = QJsonDocument(QJsonObject{{QStringLiteral("model"), text}}).toJson();
        QVERIFY(mi_is_in_heap_region(json.constData()));
        // And not everything is "in the heap": a stack address is not.
        int onStack = 0;
        QVERIFY(!mi_is_in_heap_region(&onStack));
#endif
    }
};

QTEST_GUILESS_MAIN(TestAllocator)
#include "test_allocator.moc"
