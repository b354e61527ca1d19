package driver

import (
	"fmt"
	"unsafe"
)

// Device is a CUdevice: the ordinal handle of one GPU.
type Device int32

// Attribute is a CUdevice_attribute.
type Attribute int32

// Device attributes used by this project; the values are those of cuda.h.
const (
	AttrMaxThreadsPerBlock        Attribute = 1
	AttrMaxSharedMemoryPerBlock   Attribute = 8
	AttrClockRate                 Attribute = 13 // kHz
	AttrMultiprocessorCount       Attribute = 16
	AttrMemoryClockRate           Attribute = 36 // kHz
	AttrGlobalMemoryBusWidth      Attribute = 37 // bits
	AttrL2CacheSize               Attribute = 38 // bytes
	AttrComputeCapabilityMajor    Attribute = 75
	AttrComputeCapabilityMinor    Attribute = 76
	AttrMaxSharedMemoryPerBlockIn Attribute = 97 // opt-in maximum, bytes
	AttrMaxThreadsPerSM           Attribute = 39
	AttrMaxSharedMemoryPerSM      Attribute = 81 // bytes
	AttrMaxRegistersPerSM         Attribute = 82
	AttrMaxBlocksPerSM            Attribute = 106
)

// DeviceCount returns the number of CUDA devices (cuDeviceGetCount).
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.call("cuDeviceGetCount", d.fn.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns the handle of device ordinal (cuDeviceGet).
func (d *Driver) Device(ordinal int) (Device, error) {
	var dev int32
	if err := d.call("cuDeviceGet", d.fn.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)); err != nil {
		return 0, err
	}
	return Device(dev), nil
}

// DeviceName returns the marketing name of dev, e.g. "NVIDIA H100 80GB HBM3"
// (cuDeviceGetName).
func (d *Driver) DeviceName(dev Device) (string, error) {
	buf := new([256]byte)
	if err := d.call("cuDeviceGetName", d.fn.cuDeviceGetName, uintptr(unsafe.Pointer(buf)), uintptr(len(buf)), uintptr(dev)); err != nil {
		return "", err
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return string(buf[:n]), nil
}

// DeviceAttribute returns attribute a of dev (cuDeviceGetAttribute).
func (d *Driver) DeviceAttribute(dev Device, a Attribute) (int, error) {
	var v int32
	if err := d.call("cuDeviceGetAttribute", d.fn.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev)); err != nil {
		return 0, fmt.Errorf("attribute %d: %w", a, err)
	}
	return int(v), nil
}

// DeviceTotalMem returns the global memory of dev in bytes
// (cuDeviceTotalMem_v2).
func (d *Driver) DeviceTotalMem(dev Device) (int64, error) {
	var n uint64
	if err := d.call("cuDeviceTotalMem_v2", d.fn.cuDeviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(dev)); err != nil {
		return 0, err
	}
	return int64(n), nil
}
