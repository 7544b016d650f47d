// SPDX-License-Identifier: MIT
// Test fixtures only: a minimal ERC-1271 contract wallet owned by one key (as a one-owner Safe behaves for
// signatures), and a CREATE2 factory so the same wallet can sign before it exists (ERC-6492).
pragma solidity ^0.8.20;

contract TestSmartWallet {
  address public immutable owner;

  constructor(address _owner) {
    owner = _owner;
  }

  function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
    if (signature.length != 65) return 0xffffffff;
    bytes32 r = bytes32(signature[0:32]);
    bytes32 s = bytes32(signature[32:64]);
    uint8 v = uint8(signature[64]);
    return ecrecover(hash, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
  }
}

contract TestWalletFactory {
  function deploy(address owner, bytes32 salt) external returns (address) {
    return address(new TestSmartWallet{salt: salt}(owner));
  }

  function addressOf(address owner, bytes32 salt) external view returns (address) {
    bytes32 codeHash = keccak256(abi.encodePacked(type(TestSmartWallet).creationCode, abi.encode(owner)));
    return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, codeHash)))));
  }
}
