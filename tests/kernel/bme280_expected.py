#!/usr/bin/env python3
"""The BME280 readings the kernel suite expects from covo_i2c_regs's chip at 0x76, computed here
independently of covo's driver: the datasheet's double-precision compensation formulas
(BST-BME280-DS002, section 8.1) on the calibration and raw values the module preloads.
Prints "temperature_degC humidity_pct pressure_hPa"."""
T1, T2, T3 = 27504, 26435, -1000
P1, P2, P3, P4, P5, P6, P7, P8, P9 = 36477, -10685, 3024, 2855, 140, -7, 15500, -14600, 6000
H1, H2, H3, H4, H5, H6 = 75, 362, 0, 313, 50, 30
raw = [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00, 0x6D, 0x64]  # 0xF7..0xFE
adc_p = (raw[0] << 12) | (raw[1] << 4) | (raw[2] >> 4)
adc_t = (raw[3] << 12) | (raw[4] << 4) | (raw[5] >> 4)
adc_h = (raw[6] << 8) | raw[7]

v1 = (adc_t / 16384.0 - T1 / 1024.0) * T2
v2 = ((adc_t / 131072.0 - T1 / 8192.0) ** 2) * T3
t_fine = v1 + v2
temperature = t_fine / 5120.0

v1 = t_fine / 2.0 - 64000.0
v2 = v1 * v1 * P6 / 32768.0 + v1 * P5 * 2.0
v2 = v2 / 4.0 + P4 * 65536.0
v1 = (P3 * v1 * v1 / 524288.0 + P2 * v1) / 524288.0
v1 = (1.0 + v1 / 32768.0) * P1
p = 1048576.0 - adc_p
p = (p - v2 / 4096.0) * 6250.0 / v1
p = p + (P9 * p * p / 2147483648.0 + p * P8 / 32768.0 + P7) / 16.0

h = t_fine - 76800.0
h = (adc_h - (H4 * 64.0 + H5 / 16384.0 * h)) * (
    H2 / 65536.0 * (1.0 + H6 / 67108864.0 * h * (1.0 + H3 / 67108864.0 * h)))
h = h * (1.0 - H1 * h / 524288.0)
h = min(max(h, 0.0), 100.0)

print(f"{temperature:.4f} {h:.4f} {p / 100.0:.4f}")
