// wire::imageSize: the width and height an image's header states, read from its base64 text for
// PNG, JPEG, GIF and WebP; nothing for what it cannot vouch for.
#include "core/wire/image_size.h"

#include <QtEndian>
#include <QtTest>

using sw::wire::imageSize;
using sw::wire::ImageSize;
using sw::wire::kMaxJpegMarkers;

namespace {

QByteArray be16(int v) {
    QByteArray b(2, '\0');
    qToBigEndian<quint16>(quint16(v), b.data());
    return b;
}
QByteArray be32(quint32 v) {
    QByteArray b(4, '\0');
    qToBigEndian<quint32>(v, b.data());
    return b;
}
QByteArray le16(int v) {
    QByteArray b(2, '\0');
    qToLittleEndian<quint16>(quint16(v), b.data());
    return b;
}
QByteArray le24(int v) {
    return le16(v & 0xffff) + char(v >> 16);
}

QByteArray png(quint32 w, quint32 h) {
    return QByteArray("\x89PNG\r\n\x1a\n", 8) + be32(13) + "IHDR" + be32(w) + be32(h) +
           QByteArray("\x08\x02\x00\x00\x00", 5) + be32(0) + QByteArray(40, 'x');
}

// A marker segment: FF code, its length (itself included), its body.
QByteArray segment(quint8 code, const QByteArray &body) {
    return QByteArray(1, char(0xff)) + char(code) + be16(int(body.size()) + 2) + body;
}
QByteArray frame(quint8 sof, int w, int h) {
    return segment(sof, QByteArray(1, char(8)) + be16(h) + be16(w) + QByteArray(1, char(3)) + QByteArray(9, '\x11'));
}
const QByteArray kSoi("\xff\xd8", 2);
QByteArray jfif() {
    return segment(0xe0, QByteArray("JFIF\0\x01\x02\x00\x00\x01\x00\x01\x00\x00", 14));
}

QByteArray webp(const char *chunk, const QByteArray &body) {
    return QByteArray("RIFF") + QByteArray(4, '\0') + "WEBP" + chunk + QByteArray(4, '\0') + body + QByteArray(16, 0);
}

constexpr qint64 kNone = -1; // an expected side: the size is not known

} // namespace

class TestImageSize : public QObject {
    Q_OBJECT
private slots:
    void sizes_data();
    void sizes();
    void jpegSegmentsAreSkippedUndecoded();
    void jpegScanIsBounded();
};

void TestImageSize::sizes_data() {
    QTest::addColumn<QByteArray>("image");
    QTest::addColumn<qint64>("width");
    QTest::addColumn<qint64>("height");

    QTest::addRow("PNG, a full-page screenshot") << png(1440, 8570) << qint64(1440) << qint64(8570);
    QTest::addRow("PNG, a side past 2^31") << png(0x80000001u, 1) << qint64(0x80000001) << qint64(1);
    QTest::addRow("PNG cut inside IHDR") << png(1440, 8570).left(20) << kNone << kNone;
    QTest::addRow("JPEG, baseline") << kSoi + jfif() + frame(0xc0, 2880, 1800) << qint64(2880) << qint64(1800);
    QTest::addRow("JPEG, progressive, after tables and fill bytes")
        << kSoi + jfif() + segment(0xdb, QByteArray(65, '\1')) + segment(0xc4, QByteArray(30, '\2')) +
               QByteArray(3, char(0xff)) + frame(0xc2, 9000, 600)
        << qint64(9000) << qint64(600);
    QTest::addRow("JPEG whose scan starts before a frame")
        << kSoi + jfif() + segment(0xda, QByteArray(12, '\0')) + frame(0xc0, 10, 10) << kNone << kNone;
    QTest::addRow("JPEG cut inside a segment") << (kSoi + jfif() + frame(0xc0, 2880, 1800)).left(28) << kNone << kNone;
    QTest::addRow("GIF89a") << QByteArray("GIF89a") + le16(8001) + le16(20) + QByteArray(20, '\0') << qint64(8001)
                            << qint64(20);
    QTest::addRow("WebP VP8X") << webp("VP8X", QByteArray(4, '\0') + le24(12000 - 1) + le24(700 - 1)) << qint64(12000)
                               << qint64(700);
    // VP8L: 0x2f, then the width less one in 14 bits and the height less one in the next 14.
    const quint32 packed = quint32(8191 - 1) | quint32(4000 - 1) << 14;
    QByteArray vp8l(1, '\x2f');
    vp8l += le16(int(packed & 0xffff)) + le16(int(packed >> 16));
    QTest::addRow("WebP VP8L") << webp("VP8L", vp8l) << qint64(8191) << qint64(4000);
    QTest::addRow("WebP VP8") << webp("VP8 ", QByteArray("\x10\x02\x00\x9d\x01\x2a", 6) + le16(2048) + le16(16383))
                              << qint64(2048) << qint64(16383);
    QTest::addRow("WebP VP8 with no key frame start code")
        << webp("VP8 ", QByteArray("\x10\x02\x00\x00\x00\x00", 6) + le16(2048) + le16(1000)) << kNone << kNone;
    QTest::addRow("HEIC") << QByteArray::fromHex("00000018") + "ftypheic" + QByteArray(40, '\0') << kNone << kNone;
    QTest::addRow("empty") << QByteArray() << kNone << kNone;
}

void TestImageSize::sizes() {
    QFETCH(QByteArray, image);
    QFETCH(qint64, width);
    QFETCH(qint64, height);
    const std::optional<ImageSize> got = imageSize(image.toBase64());
    QCOMPARE(got.has_value(), width != kNone);
    if (got) {
        QCOMPARE(got->width, width);
        QCOMPARE(got->height, height);
    }
    // Text broken into lines (MIME's 76 characters) says no size rather than a wrong one.
    QByteArray wrapped = image.toBase64();
    for (qsizetype at = 76; at < wrapped.size(); at += 78)
        wrapped.insert(at, "\r\n");
    if (wrapped.size() > 80)
        QVERIFY(!imageSize(wrapped));
}

void TestImageSize::jpegSegmentsAreSkippedUndecoded() {
    // A camera JPEG's EXIF segment of 60 KB before its frame: skipped by its length. Its text is
    // made unreadable here, so a size found proves none of it was decoded.
    const QByteArray exif = segment(0xe1, QByteArray(60000, '\0'));
    QByteArray text = (kSoi + jfif() + exif + frame(0xc0, 4032, 3024)).toBase64();
    // From well past the segment's head to well before the frame's (4 characters are 3 bytes).
    const qsizetype from = 200, to = (kSoi + jfif() + exif).size() / 3 * 4 - 16;
    text.replace(from, to - from, QByteArray(to - from, '!'));
    const auto got = imageSize(text);
    QVERIFY(got);
    QCOMPARE(got->width, qint64(4032));
    QCOMPARE(got->height, qint64(3024));
}

void TestImageSize::jpegScanIsBounded() {
    // Markers past kMaxJpegMarkers before the frame: no size, however long the image is.
    QByteArray comments;
    for (int i = 0; i < kMaxJpegMarkers; ++i)
        comments += segment(0xfe, "c");
    QVERIFY(!imageSize((kSoi + comments + frame(0xc0, 9000, 10)).toBase64()));
    QVERIFY(imageSize((kSoi + comments.mid(5) + frame(0xc0, 9000, 10)).toBase64()));
}

QTEST_GUILESS_MAIN(TestImageSize)
#include "test_image_size.moc"
