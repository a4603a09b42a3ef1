//! Framing: postcard + CRC-16 inside a COBS frame, ended by 0x00. See the crate docs.

use crc::{Crc, CRC_16_IBM_SDLC};
use postcard::ser_flavors::{crc::CrcModifier, Cobs, Slice};
use serde::{Deserialize, Serialize};

use crate::MAX_FRAME;

static CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_IBM_SDLC);

/// A transport failure: the bytes received were not a valid frame. Kept apart from
/// [`DeviceError`](crate::DeviceError), which is a valid answer saying a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameError {
    /// Not valid COBS (a code byte points past the frame, or a stray 0x00 inside it).
    Cobs,
    /// The CRC does not match: the frame was corrupted.
    Crc,
    /// The CRC matched but the bytes are not a message of the expected type, or leave bytes over.
    Postcard,
    /// The frame does not fit: longer than [`MAX_FRAME`] or than the buffer given.
    TooLong,
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            FrameError::Cobs => "invalid COBS frame",
            FrameError::Crc => "CRC mismatch",
            FrameError::Postcard => "frame is not a valid message",
            FrameError::TooLong => "frame too long",
        })
    }
}

impl core::error::Error for FrameError {}

/// Encodes `msg` as one frame into `buf` and returns the frame, including its trailing 0x00.
///
/// At most [`MAX_FRAME`] bytes of `buf` are used: a message that would need more is
/// [`FrameError::TooLong`], so every frame sent fits a `FrameReader<MAX_FRAME>`.
pub fn encode<'b, T: Serialize>(msg: &T, buf: &'b mut [u8]) -> Result<&'b mut [u8], FrameError> {
    let len = buf.len().min(MAX_FRAME);
    let cobs = Cobs::try_new(Slice::new(&mut buf[..len])).map_err(map_ser_err)?;
    // CRC outermost: it sees the postcard bytes first and appends its 2 bytes before the
    // COBS flavor closes the frame with 0x00.
    postcard::serialize_with_flavor(msg, CrcModifier::new(cobs, CRC16.digest()))
        .map_err(map_ser_err)
}

/// Decodes one frame (with or without its trailing 0x00) in place.
///
/// The whole frame must be consumed: trailing bytes after the message and its CRC are an error.
pub fn decode<'a, T: Deserialize<'a>>(frame: &'a mut [u8]) -> Result<T, FrameError> {
    let end = match frame.last() {
        Some(0) => frame.len() - 1,
        _ => frame.len(),
    };
    let frame = &mut frame[..end];
    if frame.is_empty() || frame.contains(&0) {
        return Err(FrameError::Cobs);
    }
    let len = cobs::decode_in_place(frame).map_err(|_| FrameError::Cobs)?;
    let payload: &'a [u8] = &frame[..len];
    let (msg, rest) = postcard::de_flavors::crc::take_from_bytes_u16(payload, CRC16.digest())
        .map_err(|e| match e {
            postcard::Error::DeserializeBadCrc => FrameError::Crc,
            // Running out of bytes usually means a corrupted length or tag; the CRC could not
            // even be located, so report it as corruption rather than a type mismatch.
            postcard::Error::DeserializeUnexpectedEnd => FrameError::Crc,
            _ => FrameError::Postcard,
        })?;
    if !rest.is_empty() {
        return Err(FrameError::Postcard);
    }
    Ok(msg)
}

fn map_ser_err(e: postcard::Error) -> FrameError {
    match e {
        postcard::Error::SerializeBufferFull => FrameError::TooLong,
        _ => FrameError::Postcard,
    }
}

/// Accumulates a byte stream into frames and decodes them.
///
/// `N` bounds a frame without its delimiter; `FrameReader<MAX_FRAME>` takes every frame
/// [`encode`] produces. Bytes of a frame longer than `N` are dropped up to the next 0x00, which
/// yields one [`FrameError::TooLong`]; garbage ending in 0x00 yields one error; empty frames
/// (0x00 0x00) yield nothing. Either way the reader is in sync again for the next frame.
///
/// ```
/// use covo_mcu_protocol::{encode, FrameReader, Request, RequestBody, MAX_FRAME};
/// let mut buf = [0u8; MAX_FRAME];
/// let frame = encode(&Request { seq: 1, body: RequestBody::Ping }, &mut buf).unwrap();
/// let mut reader = FrameReader::<MAX_FRAME>::new();
/// let mut got = None;
/// reader.feed::<Request>(frame, |r| got = Some(r));
/// assert_eq!(got.unwrap().unwrap().seq, 1);
/// ```
pub struct FrameReader<const N: usize> {
    buf: [u8; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> Default for FrameReader<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> FrameReader<N> {
    /// An empty reader, usable in a `static`.
    pub const fn new() -> Self {
        FrameReader {
            buf: [0; N],
            len: 0,
            overflowed: false,
        }
    }

    /// Consumes bytes from the front of `input` up to and including the first 0x00 that ends
    /// a non-empty frame, and returns that frame decoded; `None` when `input` ran out first
    /// (the partial frame is kept for the next call).
    ///
    /// `T` may borrow from the reader's buffer; call in a loop until it returns `None`:
    /// `while let Some(r) = reader.push::<Request>(&mut input) { .. }`.
    pub fn push<'a, T: Deserialize<'a>>(
        &'a mut self,
        input: &mut &[u8],
    ) -> Option<Result<T, FrameError>> {
        loop {
            let (&byte, rest) = input.split_first()?;
            *input = rest;
            if byte == 0 {
                if self.overflowed {
                    self.overflowed = false;
                    self.len = 0;
                    return Some(Err(FrameError::TooLong));
                }
                if self.len == 0 {
                    continue;
                }
                let len = core::mem::replace(&mut self.len, 0);
                return Some(decode(&mut self.buf[..len]));
            }
            if self.overflowed {
                continue;
            }
            if self.len == N {
                self.overflowed = true;
                continue;
            }
            self.buf[self.len] = byte;
            self.len += 1;
        }
    }

    /// Feeds `bytes` and calls `f` with every frame completed by them, good or bad.
    pub fn feed<T>(&mut self, mut bytes: &[u8], mut f: impl FnMut(Result<T, FrameError>))
    where
        T: for<'de> Deserialize<'de>,
    {
        while let Some(result) = self.push::<T>(&mut bytes) {
            f(result);
        }
    }

    /// Bytes of a partial frame held so far.
    pub fn pending(&self) -> usize {
        self.len
    }

    /// Drops any partial frame, e.g. after the link was reopened.
    pub fn reset(&mut self) {
        self.len = 0;
        self.overflowed = false;
    }
}
